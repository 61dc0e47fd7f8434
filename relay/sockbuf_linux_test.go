package relay

import "syscall"

// smallRecvBuffer asks for the smallest socket receive buffer, so that a
// client that stops reading backs up the server quickly.
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
