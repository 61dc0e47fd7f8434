package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// PathKind names the way a timeline's rows came.
type PathKind string

const (
	// PathWindow: every page came from the window on `POST /query`.
	PathWindow PathKind = "window"
	// PathFallback: some or all pages were assembled by the client from
	// standard filters over WebSocket (CW-24).
	PathFallback PathKind = "fallback"
)

// Path says how Timeline got its rows.
type Path struct {
	Kind PathKind
	// Reason says why the client fell back; "" on the window path.
	Reason string
	// WindowPages and FallbackPages count the pages handed to fn by each
	// way; a fallback after window pages continues after the last of them.
	WindowPages, FallbackPages int
	// Restarts counts refetches from the head after a change of
	// thread_replies_in_channel between pages (CL-5).
	Restarts int
}

// Timeline reads the top-level timeline of channel in pages of limit rows
// and hands each page to fn, in order: the head first, then, when all is
// set, every page of the cursor chain while has_more (CL-1); exhaustion
// comes only from has_more, never from a row count. An error from fn
// stops Timeline and is returned.
//
// When thread_replies_in_channel changes between pages, the pages read so
// far belong to another lineage: Timeline refetches from the head once and
// hands fn a head page again (its Request is nil), on which the caller
// discards what it had (CL-5). A second change is an error.
//
// Rows come from the window when the relay advertises it, its overlays can
// be trusted (CL-3) and it serves valid pages; otherwise from the standard
// filter path (CW-24), which yields the same rows in the same order, with
// client-computed bounds and no summaries or aux events. A window that
// fails mid-chain is continued by the fallback after the last window page.
func (c *Client) Timeline(ctx context.Context, channel string, limit int, all bool, fn func(*nipcw.Page) error) (Path, error) {
	path := Path{Kind: PathWindow}
	ch, ok := nipcw.ParseChannelID(channel)
	if !ok {
		return path, fmt.Errorf("client: channel %q is not a channel id (a UUID or a NIP-29 group id)", channel)
	}
	switch {
	case !c.window:
		return c.fallback(ctx, ch, nil, limit, all, c.projection, "the relay does not advertise nip-cw", path, fn)
	case c.relayKey == "" && !c.tls:
		return c.fallback(ctx, ch, nil, limit, all, c.projection, "no relay key and no TLS: overlays cannot be trusted (CL-3)", path, fn)
	}
	var cursor *nipcw.Cursor
	var lineage *nipcw.Bounds
	for {
		p, err := c.Page(ctx, ch, cursor, limit)
		if err != nil {
			if ctx.Err() != nil {
				return path, ctx.Err()
			}
			projection := c.projection
			if lineage != nil {
				projection = lineage.ThreadRepliesInChannel
			}
			return c.fallback(ctx, ch, cursor, limit, all, projection, reason(err), path, fn)
		}
		if lineage != nil && !nipcw.SameLineage(*lineage, p.Bounds) {
			if path.Restarts > 0 {
				return path, errors.New("client: thread_replies_in_channel changed twice while paging (CL-5)")
			}
			path.Restarts++
			cursor, lineage = nil, nil
			continue
		}
		lineage = &p.Bounds
		if err := fn(p); err != nil {
			return path, err
		}
		path.WindowPages++
		cursor = p.Next()
		if !all || cursor == nil {
			return path, nil
		}
	}
}

// reason says why a window page could not be used.
func reason(err error) string {
	var pe *nipcw.PageError
	var he *HTTPError
	switch {
	case errors.As(err, &pe):
		return "no valid 39006 page: " + pe.Reason
	case errors.As(err, &he):
		return fmt.Sprintf("/query errored: HTTP %d: %s", he.Status, he.Message)
	default:
		return "/query errored: " + err.Error()
	}
}

// fallback serves the pages after cursor from the standard filter path.
func (c *Client) fallback(ctx context.Context, ch string, cursor *nipcw.Cursor, limit int, all, projection bool, why string, path Path, fn func(*nipcw.Page) error) (Path, error) {
	path.Kind, path.Reason = PathFallback, why
	rows, err := c.fallbackRows(ctx, ch, projection)
	if err != nil {
		return path, fmt.Errorf("client: fallback (%s): %w", why, err)
	}
	for _, p := range pages(ch, rows, cursor, limit, projection) {
		if err := fn(p); err != nil {
			return path, err
		}
		path.FallbackPages++
		if !all {
			break
		}
	}
	return path, nil
}
