package relay

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"time"

	"github.com/buzz-lite/buzz-lite/web"
)

// newWebView is the web view (CW-25) on the relay's store, access state
// and limits: a page is read as an anonymous `/query` request is, and
// costs what it costs.
func (r *Relay) newWebView() (*web.View, error) {
	return web.New(web.Deps{
		Name:        r.cfg.Info.Name,
		Description: r.cfg.Info.Description,
		Key:         r.cfg.Key,
		URL:         r.publicURL,
		Store:       r.store,
		Community:   r.communityFor,
		Limits:      webLimits{r},
		Metrics: web.Metrics{
			Read: func(start time.Time) { since(r.metrics.queryHTTP, start) },
			Busy: func() { r.metrics.limited(limitBusy) },
		},
		ReadTimeout:  queryTimeout,
		WriteTimeout: queryWriteTimeout,
		Now:          r.now,
		Log:          r.log,
		ConnectAllow: r.cfg.WebConnectAllow,
	})
}

// webLimits are the limits of `/query` as the web view takes them
// (RL-27, RL-27a).
type webLimits struct{ r *Relay }

func (l webLimits) Admit(w http.ResponseWriter, req *http.Request, refuse func(status int, msg string)) (netip.Prefix, func(), bool) {
	return l.r.admitRequest(w, req, refuse)
}

// InSlot runs read in one of the read slots REQ, COUNT and `/query`
// share; errQueryBusy when none comes free in time.
func (l webLimits) InSlot(ctx context.Context, client netip.Prefix, read func() error) error {
	if !l.r.reads.acquire(ctx, client) {
		return errQueryBusy
	}
	defer l.r.reads.release(client)
	return read()
}

func (l webLimits) Memory(client netip.Prefix) web.Memory {
	return &webMemory{response: response{budget: l.r.queryMemory, client: client}}
}

func (webLimits) Busy(err error) bool { return errors.Is(err, errQueryBusy) }

// webMemory is what one page holds of the memory budget the answers
// share, in its client's share (RL-27a). It is a response that never
// settles: a page writes nothing to its buffer, and settling would give
// back all it holds.
type webMemory struct{ response }

func (m *webMemory) Reserve(ctx context.Context, n int64) error { return m.reserve(ctx, n) }
func (m *webMemory) Keep(n int64)                               { m.keep(n) }
func (m *webMemory) Release()                                   { m.release() }

// ReadBounded is readBounded for a page: the read is bounded by a
// response of its own, whose settling after a page too large gives back
// only that read's own bound, never what the page's earlier reads hold.
// Once read, the reservation is made what the read holds (size) and stays
// with the page.
func (m *webMemory) ReadBounded(ctx context.Context, read func(maxBytes int) (size int, err error)) error {
	one := &response{budget: m.budget, client: m.client}
	defer func() { m.reserved += one.reserved }()
	size, err := readBounded(ctx, one, read)
	if err != nil {
		return err
	}
	// The store read no more than the bound: what it read is at most
	// what is reserved.
	if spare := one.reserved - int64(size); spare > 0 {
		m.budget.give(m.client, spare)
		one.reserved -= spare
	}
	return nil
}
