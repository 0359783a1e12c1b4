package index

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// populateFiles maps into the process every page of its mappings of the
// given files (MADV_POPULATE_READ, Linux 5.14 and later).
func populateFiles(paths map[string]bool) error {
	raw, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	var first error
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		start, end, path, ok := parseMapsLine(sc.Text())
		if !ok || !paths[path] {
			continue
		}
		_, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_POPULATE_READ)
		if errno != 0 && first == nil {
			first = errno
		}
	}
	return first
}

// parseMapsLine reads one line of /proc/self/maps:
// "start-end perms offset dev inode path".
func parseMapsLine(line string) (start, end uint64, path string, ok bool) {
	fields := strings.SplitN(line, " ", 6)
	if len(fields) < 6 {
		return 0, 0, "", false
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	if !found {
		return 0, 0, "", false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	path = strings.TrimLeft(fields[5], " ")
	if err1 != nil || err2 != nil || end <= start || !strings.HasPrefix(path, "/") {
		return 0, 0, "", false
	}
	return start, end, path, true
}

// availableMemory is the memory the kernel reports available, in bytes.
func availableMemory() int64 {
	kb, _ := procKB("/proc/meminfo", "MemAvailable:")
	return kb << 10
}
