package buzz

// StoreStats are the numbers a store tells of itself for the relay's
// metrics (RL-30).
type StoreStats struct {
	// WriterQueue is how many writes wait for the writer.
	WriterQueue int
	// BatchSizes counts the batches the writer has taken by size:
	// BatchSizes[i] those of more than BatchSizeBounds[i-1] and at most
	// BatchSizeBounds[i] jobs. BatchJobs is the jobs of all of them.
	BatchSizes [len(BatchSizeBounds)]uint64
	BatchJobs  uint64
	// PagesFromCache and PagesFromDatabase count the window pages served
	// from the page cache and read from the database.
	PagesFromCache, PagesFromDatabase uint64
	// PageCacheBytes is what the pages the cache keeps count against its
	// bound (storage.page_cache_bytes): memory of the relay's own that an
	// operator sizes the bound by.
	PageCacheBytes int64
	// DatabaseBytes and WALBytes are the sizes of the database file and
	// of its write-ahead log.
	DatabaseBytes, WALBytes int64
}

// BatchSizeBounds are the upper bounds of StoreStats.BatchSizes; the last
// is the most jobs a batch takes.
var BatchSizeBounds = [...]int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}
