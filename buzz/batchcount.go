package buzz

import (
	"slices"
	"sync/atomic"
)

// BatchCounts counts the batches a store's writer took, by size
// (BatchSizeBounds), and their jobs, for the metrics (RL-30). It is safe
// for concurrent use.
type BatchCounts struct {
	sizes [len(BatchSizeBounds)]atomic.Uint64
	jobs  atomic.Uint64
}

// Count counts a batch of jobs jobs; one of more jobs than the last bound
// counts in the last.
func (c *BatchCounts) Count(jobs int) {
	i, _ := slices.BinarySearch(BatchSizeBounds[:], jobs)
	c.sizes[min(i, len(c.sizes)-1)].Add(1)
	c.jobs.Add(uint64(jobs))
}

// PageCounts are the window pages a store served from its page cache and
// read from its database, and the bytes of the pages the cache keeps.
type PageCounts interface {
	Counts() (fromCache, fromDatabase uint64)
	Bytes() int64
}

// WriterStats are the StoreStats of a writer with queue writes waiting,
// the batches c counted and the pages of pages; the sizes of the database
// are the store's to add.
func WriterStats(queue int, c *BatchCounts, pages PageCounts) StoreStats {
	st := StoreStats{WriterQueue: queue, BatchJobs: c.jobs.Load()}
	st.PagesFromCache, st.PagesFromDatabase = pages.Counts()
	st.PageCacheBytes = pages.Bytes()
	for i := range st.BatchSizes {
		st.BatchSizes[i] = c.sizes[i].Load()
	}
	return st
}
