package importer

import (
	"io"
	"sync/atomic"
)

// countingReader counts the bytes read through it, for progress.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
