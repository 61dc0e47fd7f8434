//go:build !linux

package relay

import "syscall"

// smallRecvBuffer is a no-op where we do not know the socket options.
func smallRecvBuffer(network, address string, c syscall.RawConn) error { return nil }
