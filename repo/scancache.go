package repo

import (
	"bufio"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"os"
	"path/filepath"
)

// The last full scan is kept on disk (.graft/scan.gob) so that a short-lived
// process (a CLI command) scans a large repository incrementally too: it
// diffs the saved commit's tree against the one it needs. The file is derived
// state; it is ignored when unreadable or when graft.yaml changed.

const scanFile = "scan.gob"

type savedScan struct {
	ConfigKey string
	Commit    string
	Entries   []fileEntry
}

// configKey identifies the configuration a scan was made with.
func (p *Project) configKey() string {
	data, err := os.ReadFile(p.Config.File)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (p *Project) loadScan() *Snapshot {
	key := p.configKey()
	if key == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(p.StateDir, scanFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	var saved savedScan
	if gob.NewDecoder(bufio.NewReader(f)).Decode(&saved) != nil || saved.ConfigKey != key || saved.Commit == "" {
		return nil
	}
	entries := make(map[string]fileEntry, len(saved.Entries))
	for _, e := range saved.Entries {
		entries[e.Path] = e
	}
	return buildSnapshot(saved.Commit, entries)
}

func (p *Project) saveScan(s *Snapshot) {
	key := p.configKey()
	if key == "" || s.Commit == "" || p.EnsureStateDir() != nil {
		return
	}
	saved := savedScan{ConfigKey: key, Commit: s.Commit, Entries: make([]fileEntry, 0, len(s.entries))}
	for _, e := range s.entries {
		saved.Entries = append(saved.Entries, e)
	}
	tmp, err := os.CreateTemp(p.StateDir, scanFile+".tmp-*")
	if err != nil {
		return
	}
	w := bufio.NewWriter(tmp)
	err = gob.NewEncoder(w).Encode(saved)
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return
	}
	os.Rename(tmp.Name(), filepath.Join(p.StateDir, scanFile))
}
