//go:build !linux

package index

import "errors"

// populateFiles is Linux's alone; elsewhere pages are mapped on first touch.
func populateFiles(map[string]bool) error {
	return errors.New("index: pages are mapped on first touch here")
}

// availableMemory is unknown here, so nothing is warmed.
func availableMemory() int64 { return 0 }
