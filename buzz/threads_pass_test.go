package buzz

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// pagedCandidates are a store's candidates for a backfill or a
// reclassify, numbered 1 to n, with the cursor of candidate seq at
// (seq, {seq}); placed lists the candidates the rules were asked about.
type pagedCandidates struct {
	n      int64
	placed []int64
}

// noPlacing are rows where no candidate is stored any more: the rules
// decide nothing, so a pass only walks its pages.
type noPlacing struct {
	ReclassifyRows
	c *pagedCandidates
}

func (r noPlacing) Placing(ref int64) (*Placing, error) {
	r.c.placed = append(r.c.placed, ref)
	return nil, nil
}

func (c *pagedCandidates) Unclassified(after BackfillCursor, limit int) ([]int64, BackfillCursor, error) {
	var seqs []int64
	for seq := max(after.At+1, 1); seq <= c.n && len(seqs) < limit; seq++ {
		seqs = append(seqs, seq)
		after = BackfillCursor{At: seq, ID: []byte{byte(seq)}}
	}
	return seqs, after, nil
}

func (c *pagedCandidates) TopLevelAfter(after int64, limit int) ([]int64, error) {
	seqs, _, err := c.Unclassified(BackfillCursor{At: after}, limit)
	return seqs, err
}

func (c *pagedCandidates) PlacingRows() PlacingRows       { return noPlacing{c: c} }
func (c *pagedCandidates) ReclassifyRows() ReclassifyRows { return noPlacing{c: c} }

// retryingWrite runs every job twice, as a writer may, the first run
// rolled back; it fails the job numbered failAt (from 1; 0 for none).
func retryingWrite[T any](tx T, failAt int) (write func(context.Context, func(T, int64) error) error, jobs *int) {
	jobs = new(int)
	return func(_ context.Context, job func(T, int64) error) error {
		*jobs++
		if *jobs == failAt {
			return errors.New("the writer failed")
		}
		if err := job(tx, 1000); err != nil {
			return err
		}
		return job(tx, 1000)
	}, jobs
}

// CW-12: a backfill pass takes every candidate, page after page, from
// where the last committed page ended (a job the writer runs twice counts
// once); a pass that classifies nothing ends the backfill, and what it
// saw is waiting.
func TestBackfillPages(t *testing.T) {
	c := &pagedCandidates{n: 2*BackfillPageSize + 17}
	write, jobs := retryingWrite[BackfillTx](c, 0)
	res, err := Backfill(context.Background(), write)
	if err != nil || res != (BackfillResult{Waiting: int(c.n)}) {
		t.Fatalf("backfill: %+v, %v; want all %d waiting", res, err, c.n)
	}
	if *jobs != 3 {
		t.Errorf("%d write jobs, want 3 pages", *jobs)
	}
	if want := twicePerPage(c.n); !slices.Equal(c.placed, want) {
		t.Errorf("candidates looked at: %v\nwant %v", c.placed, want)
	}

	write, _ = retryingWrite[BackfillTx](c, 2)
	if _, err := Backfill(context.Background(), write); err == nil {
		t.Error("a failed page did not fail the backfill")
	}
}

// CW-10 (as changed on 2026-12-03): a reclassify walks every top-level
// event once, page after page, from where the last committed page ended;
// a job the writer runs twice counts once.
func TestReclassifyPages(t *testing.T) {
	c := &pagedCandidates{n: BackfillPageSize + 1}
	write, jobs := retryingWrite[ReclassifyTx](c, 0)
	res, err := Reclassify(context.Background(), write)
	if err != nil || res != (ReclassifyResult{}) {
		t.Fatalf("reclassify: %+v, %v; want nothing moved or kept", res, err)
	}
	if *jobs != 2 {
		t.Errorf("%d write jobs, want 2 pages", *jobs)
	}
	if want := twicePerPage(c.n); !slices.Equal(c.placed, want) {
		t.Errorf("candidates looked at: %v\nwant %v", c.placed, want)
	}
}

// twicePerPage is candidates 1 to n as a pass whose every job runs twice
// looks at them: each page, then the same page again.
func twicePerPage(n int64) []int64 {
	var out []int64
	for first := int64(1); first <= n; first += BackfillPageSize {
		for range 2 {
			for seq := first; seq < first+BackfillPageSize && seq <= n; seq++ {
				out = append(out, seq)
			}
		}
	}
	return out
}
