package web

import (
	"context"
	"net/url"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// readable is the channel h when an anonymous reader may read it,
// errNotFound otherwise (RL-13).
func (v *View) readable(ctx context.Context, h string) (*channelItem, error) {
	c := v.d.Community(ctx, func(c *buzz.Community) bool { return c.CanReadChannel(buzz.Anonymous, h) })
	ch := c.Channel(h)
	if !c.CanRead(buzz.Anonymous, ch) {
		return nil, errNotFound
	}
	item := channelItemOf(ch)
	return &item, nil
}

// channel reads one window page as `/query` does (CW-9..CW-19): the same
// store call, through the page cache, within the same byte bounds.
func (v *View) channel(ctx context.Context, rt route, q url.Values, mem Memory, p *view) error {
	ch, err := v.readable(ctx, rt.channel)
	if err != nil {
		return err
	}
	p.Channel = ch
	p.Title = ch.Name + " · " + v.d.Name
	before, err := parseCursor(q)
	if err != nil {
		return err
	}
	wq := buzz.WindowQuery{
		Channel:    rt.channel,
		Kinds:      rowKinds,
		Limit:      PageRows,
		Before:     before,
		Projection: v.d.Store.Community().ThreadRepliesInChannel,
		Summaries:  true,
		Aux:        true,
		Viewer:     buzz.Anonymous,
	}
	page, err := readPage(ctx, mem, func(maxBytes int) (*buzz.WindowPage, error) {
		wq.MaxBytes = maxBytes
		return v.d.Store.Window(ctx, wq)
	}, func(p *buzz.WindowPage) int { return RawSize(p.Rows, p.Aux) })
	if err != nil {
		return err
	}
	if page.Unreadable {
		return errNotFound // access changed since readable
	}
	rows, err := decodeRaw(ctx, mem, page.Rows)
	if err != nil {
		return err
	}
	aux, err := decodeRaw(ctx, mem, page.Aux)
	if err != nil {
		return err
	}
	replies := make(map[string]int64, len(page.Summaries))
	for _, sm := range page.Summaries {
		replies[sm.ID] = sm.DescendantCount
	}
	names, err := v.profiles(ctx, rows, mem)
	if err != nil {
		return err
	}
	b := rowBuilder{channel: rt.channel, now: v.d.Now(), names: names, aux: indexAux(aux), replies: replies}
	for _, ev := range rows {
		p.Rows = append(p.Rows, b.row(ev, RowTextBytes))
	}
	if page.HasMore && page.Next != nil {
		p.Older = pageLink(rt.channel, "", page.Next)
	}
	return nil
}

// profiles reads the display names of the authors of evs from their kind
// 0 profiles: one query for the page, bounded in bytes, as an anonymous
// reader.
func (v *View) profiles(ctx context.Context, evs []*nostr.Event, mem Memory) (map[string]string, error) {
	seen := make(map[string]bool, len(evs))
	authors := make([]string, 0, len(evs))
	for _, ev := range evs {
		if !seen[ev.PubKey] {
			seen[ev.PubKey] = true
			authors = append(authors, ev.PubKey)
		}
	}
	names := make(map[string]string, len(authors))
	if len(authors) == 0 {
		return names, nil
	}
	if err := mem.Reserve(ctx, profileBytes); err != nil {
		return nil, err
	}
	f := nostr.Filter{Kinds: []int{0}, Authors: authors, Limit: len(authors)}
	raws, _, err := v.d.Store.QueryBounded(ctx, f, buzz.Anonymous, "", profileBytes)
	if err != nil {
		return nil, err
	}
	profiles, err := decodeRaw(ctx, mem, raws)
	if err != nil {
		return nil, err
	}
	for _, p := range profiles {
		if name := profileName(p.Content); name != "" {
			names[p.PubKey] = name
		}
	}
	return names, nil
}
