package index

// availableMemory is the memory the kernel reports available, in bytes.
func availableMemory() int64 {
	kb, _ := procKB("/proc/meminfo", "MemAvailable:")
	return kb << 10
}
