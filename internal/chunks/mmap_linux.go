package chunks

import (
	"fmt"
	"syscall"
)

// mapChunk maps a chunk of anonymous memory with its pages already in
// place: one system call, where touching a fresh mapping page by page cost
// a fault for each 4 KiB.
func mapChunk() ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, Size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("map an answer chunk: %w", err)
	}
	return b, nil
}

// unmapChunk gives a mapped chunk back to the system. Munmap fails only for
// an address range that is not a mapping: b did not come from mapChunk,
// and whatever handed it over is broken.
func unmapChunk(b []byte) {
	if err := syscall.Munmap(b[:Size]); err != nil {
		panic(fmt.Sprintf("unmap an answer chunk: %v", err))
	}
}
