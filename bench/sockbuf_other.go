//go:build !linux

package bench

import "syscall"

// smallRecvBuffer is a no-op where we do not know the socket options: the
// kernel's buffers then take part of what a client leaves unread.
func smallRecvBuffer(network, address string, c syscall.RawConn) error { return nil }
