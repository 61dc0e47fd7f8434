package buzz

import "testing"

// fixedPages are PageCounts that say what they were given.
type fixedPages struct {
	cache, db uint64
	bytes     int64
}

func (p fixedPages) Counts() (uint64, uint64) { return p.cache, p.db }
func (p fixedPages) Bytes() int64             { return p.bytes }

// RL-30: a batch counts under the smallest bound that holds it, one larger
// than every bound under the last; the jobs add up, and the writer's
// stats carry its queue and the page counts.
func TestBatchCounts(t *testing.T) {
	var c BatchCounts
	for _, jobs := range []int{1, 1, 2, 3, 4, 5, 512, 513, 10_000} {
		c.Count(jobs)
	}
	st := WriterStats(7, &c, fixedPages{3, 4, 5})
	last := len(BatchSizeBounds) - 1
	want := map[int]uint64{0: 2, 1: 1, 2: 2, 3: 1, last: 3}
	for i, n := range st.BatchSizes {
		if n != want[i] {
			t.Errorf("batches of at most %d jobs: %d, want %d", BatchSizeBounds[i], n, want[i])
		}
	}
	if st.BatchJobs != 1+1+2+3+4+5+512+513+10_000 || st.WriterQueue != 7 || st.PagesFromCache != 3 || st.PagesFromDatabase != 4 ||
		st.PageCacheBytes != 5 {
		t.Errorf("stats %+v", st)
	}
}
