//go:build !linux

package serve

import "net"

// peerUID reports no uid where SO_PEERCRED does not exist: the socket
// file's mode (0600) alone keeps other users out.
func peerUID(*net.UnixConn) (int, error) { return -1, nil }
