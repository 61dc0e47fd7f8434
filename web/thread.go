package web

import (
	"context"
	"net/url"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// thread reads a thread as `/query` does (RL-20): its root, then the
// replies below it oldest first, PageRows a page, with their aux closure;
// the replies are nested under their parents. A deleted root's replies
// are still served (RL-20): they are shown under a "deleted message" in
// its place, as long as some reply of the page shows that the root was in
// the channel of the path; otherwise the page is not found.
func (v *View) thread(ctx context.Context, rt route, q url.Values, mem Memory, p *view) error {
	ch, err := v.readable(ctx, rt.channel)
	if err != nil {
		return err
	}
	p.Channel = ch
	p.Title = "Thread in " + ch.Name + " · " + v.d.Name
	after, err := parseCursor(q)
	if err != nil {
		return err
	}
	root, err := v.threadRoot(ctx, rt, mem)
	if err != nil {
		return err
	}
	replies, aux, err := v.threadReplies(ctx, rt, after, root == nil, mem)
	if err != nil {
		return err
	}
	if len(replies) > PageRows {
		replies = replies[:PageRows]
		last := replies[len(replies)-1]
		p.Later = pageLink(rt.channel, rt.event, &buzz.Position{CreatedAt: int64(last.CreatedAt), ID: last.ID})
	}
	all := replies
	if root != nil {
		all = append([]*nostr.Event{root}, replies...)
	}
	b, err := v.threadRows(ctx, rt.channel, all, aux, mem)
	if err != nil {
		return err
	}
	if root != nil {
		p.Root = b.row(root, RootTextBytes)
		p.Root.Whole = "" // this is its page
	} else {
		p.Root = &row{ID: rt.event, Deleted: true, Thread: pageLink(rt.channel, rt.event, nil)}
	}
	nest(p.Root, replies, b)
	return nil
}

// threadRoot is the root of the thread of rt, nil when it is deleted or
// never was; errNotFound when it is in another channel than rt's.
func (v *View) threadRoot(ctx context.Context, rt route, mem Memory) (*nostr.Event, error) {
	raw, err := readPage(ctx, mem, func(maxBytes int) ([]buzz.RawEvent, error) {
		evs, truncated, err := v.d.Store.QueryBounded(ctx, nostr.Filter{IDs: []string{rt.event}, Limit: 1}, buzz.Anonymous, "", maxBytes)
		if err == nil && truncated {
			return nil, buzz.ErrTooLarge
		}
		return evs, err
	}, func(evs []buzz.RawEvent) int { return RawSize(evs) })
	if err != nil {
		return nil, err
	}
	found, err := decodeRaw(ctx, mem, raw)
	if err != nil || len(found) != 1 {
		return nil, err
	}
	if h, err := buzz.ChannelOf(found[0].Tags); err != nil || h != rt.channel {
		return nil, errNotFound
	}
	return found[0], nil
}

// threadReplies reads a page of the replies below rt's root, one past
// PageRows, and their aux closure. Without a root (rootless) the replies
// are the page's only sign that the thread was in rt's channel: the store
// served them only if an anonymous reader may read its channel, and each
// names it.
func (v *View) threadReplies(ctx context.Context, rt route, after *buzz.Position, rootless bool, mem Memory) (replies, aux []*nostr.Event, err error) {
	tq := buzz.ThreadQuery{Root: rt.event, DepthLimit: threadDepth, Limit: PageRows + 1, After: after, Aux: true, Viewer: buzz.Anonymous}
	page, err := readPage(ctx, mem, func(maxBytes int) (*buzz.ThreadPage, error) {
		tq.MaxBytes = maxBytes
		return v.d.Store.Thread(ctx, tq)
	}, func(p *buzz.ThreadPage) int { return RawSize(p.Replies, p.Aux) })
	if err != nil {
		return nil, nil, err
	}
	replies, err = decodeRaw(ctx, mem, page.Replies)
	if err != nil {
		return nil, nil, err
	}
	if rootless {
		if len(replies) == 0 {
			return nil, nil, errNotFound
		}
		for _, ev := range replies {
			if h, err := buzz.ChannelOf(ev.Tags); err != nil || h != rt.channel {
				return nil, nil, errNotFound
			}
		}
	}
	aux, err = decodeRaw(ctx, mem, page.Aux)
	if err != nil {
		return nil, nil, err
	}
	return replies, aux, nil
}

// threadRows is the row builder of a thread page showing evs: their
// reply counts and their authors' names read.
func (v *View) threadRows(ctx context.Context, channel string, evs, aux []*nostr.Event, mem Memory) (rowBuilder, error) {
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	sums, err := v.d.Store.Summaries(ctx, ids)
	if err != nil {
		return rowBuilder{}, err
	}
	counts := make(map[string]int64, len(sums))
	for _, sm := range sums {
		counts[sm.ID] = sm.DescendantCount
	}
	names, err := v.profiles(ctx, evs, mem)
	if err != nil {
		return rowBuilder{}, err
	}
	return rowBuilder{channel: channel, now: v.d.Now(), names: names, aux: indexAux(aux), replies: counts}, nil
}

// nest puts the rows of replies, oldest first, under their parents below
// root; a reply whose parent is on an earlier page goes right below root.
func nest(root *row, replies []*nostr.Event, b rowBuilder) {
	byID := map[string]*row{root.ID: root}
	for _, ev := range replies {
		r := b.row(ev, RowTextBytes)
		parentID := buzz.ParseThreadTags(ev.Tags).Parent
		parent := byID[parentID]
		if parent == nil {
			// Its parent is on an earlier page: shown below the root.
			r.ReplyTo = shortID(parentID)
			parent = root
		}
		r.Depth = parent.Depth + 1
		parent.Children = append(parent.Children, r)
		byID[ev.ID] = r
	}
}
