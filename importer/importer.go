// Package importer reads JSON Lines of signed nostr events (the output of
// `buzz-lite export`, `strfry export` or a `nak req` dump), verifies them on
// every core, and stores them in file order through the store's import
// path (issue 8). A bad line is counted and reported with its number and
// reason, never fatal unless asked.
package importer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/mailru/easyjson"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/verify"
)

// Store is what an import writes to.
type Store interface {
	// ImportBatch stores events in order; see sqlite.Store.ImportBatch.
	ImportBatch(ctx context.Context, evs []*nostr.Event) ([]error, error)
}

// Options steer an import.
type Options struct {
	// NoVerify skips id and signature checks: only for dumps the operator
	// made.
	NoVerify bool
	// Strict stops at the first bad line.
	Strict bool
	// Now is the clock for the date rule; nil means time.Now.
	Now func() time.Time
	// Progress, if set, is called now and then with the bytes read so far
	// and the lines done.
	Progress func(bytesRead int64, lines int)
	// Problem, if set, is called with every bad line.
	Problem func(BadLine)
}

// BadLine is a line that was not stored, and why.
type BadLine struct {
	Line   int
	Reason string
}

// Summary counts what an import did.
type Summary struct {
	Lines     int
	Accepted  int
	Duplicate int
	// Replaced counts older versions of replaceable and addressable events
	// that were not stored because a newer one is.
	Replaced int
	// Rejected counts bad lines by reason.
	Rejected map[string]int
}

// Bad is how many lines were rejected.
func (s Summary) Bad() int {
	n := 0
	for _, c := range s.Rejected {
		n += c
	}
	return n
}

// ErrStrict is returned when Options.Strict stopped the import at a bad line.
var ErrStrict = errors.New("import stopped at a bad line (--strict)")

// maxLine bounds one line: more than any event a relay accepts.
const maxLine = 1 << 20

// batchSize is how many events one store transaction takes.
const batchSize = 500

type line struct {
	n        int
	text     []byte
	overlong bool
}

type parsed struct {
	n   int
	ev  *nostr.Event
	err string
}

// Run imports the JSON Lines of r.
func Run(ctx context.Context, r io.Reader, store Store, opts Options) (Summary, error) {
	sum := Summary{Rejected: map[string]int{}}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	counter := &countingReader{r: r}
	lines := make(chan line, 1024)
	results := make(chan parsed, 1024)
	readErr := make(chan error, 1)
	go func() {
		defer close(lines)
		readErr <- readLines(ctx, counter, lines)
	}()
	go parseLines(ctx, lines, results, opts.NoVerify, now)

	// Lines come back from the workers out of order; they are stored in
	// file order, so that what a file says first happens first.
	// Strict stores event by event: a batch commits as a whole, and what
	// follows a refused event must not be stored.
	size := batchSize
	if opts.Strict {
		size = 1
	}
	pending := map[int]parsed{}
	next := 1
	var batch []*nostr.Event
	var batchLines []int
	lastReport := time.Now()
	bad := func(n int, reason string) error {
		sum.Rejected[reason]++
		if opts.Problem != nil {
			opts.Problem(BadLine{Line: n, Reason: reason})
		}
		if opts.Strict {
			return fmt.Errorf("line %d: %s: %w", n, reason, ErrStrict)
		}
		return nil
	}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		outcomes, err := store.ImportBatch(ctx, batch)
		if err != nil {
			return fmt.Errorf("store lines %d-%d: %w", batchLines[0], batchLines[len(batchLines)-1], err)
		}
		for i, err := range outcomes {
			switch {
			case err == nil:
				sum.Accepted++
			case errors.Is(err, buzz.ErrDuplicate):
				sum.Duplicate++
			case errors.Is(err, buzz.ErrNewerVersionStored):
				sum.Replaced++
			default:
				if err := bad(batchLines[i], err.Error()); err != nil {
					return err
				}
			}
		}
		batch, batchLines = batch[:0], batchLines[:0]
		return nil
	}
	for p := range results {
		pending[p.n] = p
		for {
			q, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			sum.Lines++
			if q.err != "" {
				if err := bad(q.n, q.err); err != nil {
					// Strict: what came before the bad line is stored.
					return sum, errors.Join(flush(), err)
				}
				continue
			}
			if q.ev == nil {
				sum.Lines-- // a blank line
				continue
			}
			batch = append(batch, q.ev)
			batchLines = append(batchLines, q.n)
			if len(batch) == size {
				if err := flush(); err != nil {
					return sum, err
				}
			}
		}
		if opts.Progress != nil && time.Since(lastReport) > 200*time.Millisecond {
			opts.Progress(counter.n.Load(), sum.Lines)
			lastReport = time.Now()
		}
	}
	if err := flush(); err != nil {
		return sum, err
	}
	if err := <-readErr; err != nil {
		return sum, err
	}
	if opts.Progress != nil {
		opts.Progress(counter.n.Load(), sum.Lines)
	}
	return sum, nil
}

// readLines sends the lines of r, numbered from 1, until r ends or ctx
// is done.
func readLines(ctx context.Context, r io.Reader, lines chan<- line) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		text, overlong, err := readLine(br)
		if len(text) > 0 || overlong || err == nil {
			select {
			case lines <- line{n: n, text: text, overlong: overlong}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read line %d: %w", n, err)
		}
	}
}

// parseLines parses lines into results, in no order, and closes results
// when lines is closed and parsed or ctx is done. Verification is the
// cost of an import: every core does it, with one hash for id and
// signature and the parsed keys of authors seen, and each worker verifies
// the lines it takes together (verifyBatch).
func parseLines(ctx context.Context, lines <-chan line, results chan<- parsed, noVerify bool, now func() time.Time) {
	var wg sync.WaitGroup
	verifier := &verify.Verifier{}
	most := verifyBatch
	if noVerify {
		most = 1 // a line held back for others only delays the writer
	}
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			batch := make([]line, 0, most)
			for l := range lines {
				batch = append(batch[:0], l)
			fill:
				for len(batch) < most {
					select {
					case l, ok := <-lines:
						if !ok {
							break fill
						}
						batch = append(batch, l)
					default:
						break fill
					}
				}
				for _, p := range parseBatch(batch, verifier, noVerify, now()) {
					select {
					case results <- p:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(results)
}

// verifyBatch is how many lines a worker takes, when the reader is ahead,
// to verify their signatures together (verify.Verifier.Events): 64 cost
// an event about half of a verification of its own
// (internal/verify's BenchmarkVerifyBatch).
const verifyBatch = 64

// parseBatch parses and checks lines as parse does each, their ids and
// signatures verified together.
func parseBatch(lines []line, verifier *verify.Verifier, noVerify bool, now time.Time) []parsed {
	out := make([]parsed, len(lines))
	var evs []*nostr.Event
	var at []int
	for i, l := range lines {
		out[i] = parse(l, now)
		if out[i].ev != nil && !noVerify {
			evs = append(evs, out[i].ev)
			at = append(at, i)
		}
	}
	errs := make([]error, len(evs))
	verifier.Events(evs, errs)
	for j, err := range errs {
		if reason := verifyRefusal(err); reason != "" {
			out[at[j]].ev, out[at[j]].err = nil, reason
		}
	}
	return out
}

// parse decodes and checks one line: JSON and the submission rules every
// surface applies (CW-22, RL-9); its id and signature are parseBatch's.
func parse(l line, now time.Time) parsed {
	p := parsed{n: l.n}
	if l.overlong {
		p.err = fmt.Sprintf("invalid: line longer than %d bytes", maxLine)
		return p
	}
	if len(trimSpace(l.text)) == 0 {
		return p
	}
	ev := &nostr.Event{}
	if err := easyjson.Unmarshal(l.text, ev); err != nil || ev.ID == "" {
		p.err = "invalid: not a JSON event"
		return p
	}
	if p.err = Refusal(ev, now); p.err != "" {
		return p
	}
	p.ev = ev
	return p
}

// Refusal is why an event from outside (a file, another relay) is not
// stored by the submission rules every surface applies (CW-22, RL-9), or
// "" when it may be; its id and signature are checked apart.
func Refusal(ev *nostr.Event, now time.Time) string {
	if err := buzz.CheckSubmission(ev, now); err != nil {
		return err.Error()
	}
	return ""
}

// verifyRefusal is the refusal of an event whose id and signature check
// said err, "" for nil.
func verifyRefusal(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, verify.ErrID):
		return "invalid: id is computed incorrectly"
	default:
		return "invalid: signature is invalid"
	}
}

// readLine reads one line; a line over maxLine is skipped and reported
// as overlong.
func readLine(br *bufio.Reader) (text []byte, overlong bool, err error) {
	for {
		chunk, isPrefix, err := br.ReadLine()
		text = append(text, chunk...)
		if len(text) > maxLine {
			for isPrefix && err == nil {
				_, isPrefix, err = br.ReadLine()
			}
			return nil, true, err
		}
		if !isPrefix || err != nil {
			return text, false, err
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Reasons lists the rejection reasons of s, most frequent first.
func (s Summary) Reasons() []string {
	out := make([]string, 0, len(s.Rejected))
	for r := range s.Rejected {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if s.Rejected[out[i]] != s.Rejected[out[j]] {
			return s.Rejected[out[i]] > s.Rejected[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}
