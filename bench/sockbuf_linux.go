package bench

import "syscall"

// smallRecvBuffer asks for the smallest socket receive buffer: a client
// that leaves an answer unread then makes the relay hold it, instead of
// the kernel's buffers taking megabytes of it.
func smallRecvBuffer(network, address string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
	})
	if err != nil {
		return err
	}
	return serr
}
