// Package gen generates a synthetic community, deterministically from a
// seed: channels (created with NIP-29 lifecycle events, every other one
// private), authors, top-level messages, threads of some depth and
// fan-out, broadcast replies, reactions, edits, deletions and same-second
// bursts, as signed events in an order a relay accepts (parents before
// replies, targets before their reactions). Tests and benchmarks load it
// into a store; the same seed gives the same events, signatures included.
package gen

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// Options shape a community. Zero values take the defaults of Default.
type Options struct {
	Seed     uint64
	Channels int
	Authors  int
	// TopLevel is the number of top-level messages per channel.
	TopLevel int
	// Replies is the mean number of replies below a top-level message,
	// spread over depths 1 to MaxDepth.
	Replies  int
	MaxDepth int
	// Reactions is the mean number of reactions per message.
	Reactions int
	// BroadcastPercent of depth-1 replies carry ["broadcast","1"].
	BroadcastPercent int
	// EditPercent of top-level messages get an edit; DeletePercent of
	// those without replies are deleted by their author, and three times
	// as many reactions by theirs.
	EditPercent, DeletePercent int
	// BurstPercent of top-level messages share the second of the one
	// before (same-second bursts, CW-15).
	BurstPercent int
	// Start is the created_at of the first message.
	Start int64
}

// Default is a small, realistic community.
var Default = Options{
	Seed: 1, Channels: 4, Authors: 50, TopLevel: 500, Replies: 6, MaxDepth: 4, Reactions: 2,
	BroadcastPercent: 10, EditPercent: 5, DeletePercent: 3, BurstPercent: 20, Start: 1_700_000_000,
}

func (o Options) withDefaults() Options {
	d := Default
	if o.Seed != 0 {
		d.Seed = o.Seed
	}
	for _, p := range []struct{ dst, src *int }{
		{&d.Channels, &o.Channels}, {&d.Authors, &o.Authors}, {&d.TopLevel, &o.TopLevel},
		{&d.Replies, &o.Replies}, {&d.MaxDepth, &o.MaxDepth}, {&d.Reactions, &o.Reactions},
		{&d.BroadcastPercent, &o.BroadcastPercent}, {&d.EditPercent, &o.EditPercent},
		{&d.DeletePercent, &o.DeletePercent}, {&d.BurstPercent, &o.BurstPercent},
	} {
		if *p.src != 0 {
			*p.dst = *p.src
		}
	}
	if o.Start != 0 {
		d.Start = o.Start
	}
	return d
}

// Community is a generated community.
type Community struct {
	// Channels are the channel ids (UUIDs).
	Channels []string
	// Events are every event, in an order a relay accepts them.
	Events []*nostr.Event
	// Authors are the secret keys (hex) of the authors, by index.
	Authors []string
}

// Generate builds the community of o. Signing uses every core.
func Generate(o Options) (*Community, error) {
	o = o.withDefaults()
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	c := &Community{}
	pubkeys := make([]string, o.Authors)
	for i := range o.Authors {
		sk := key(o.Seed, "author", i)
		pk, err := nostr.GetPublicKey(sk)
		if err != nil {
			return nil, fmt.Errorf("author key: %w", err)
		}
		c.Authors = append(c.Authors, sk)
		pubkeys[i] = pk
	}
	for i := range o.Channels {
		h := sha256.Sum256(fmt.Appendf(nil, "%d channel %d", o.Seed, i))
		x := hex.EncodeToString(h[:16])
		c.Channels = append(c.Channels, x[:8]+"-"+x[8:12]+"-4"+x[13:16]+"-8"+x[17:20]+"-"+x[20:32])
	}

	type draft struct {
		ev     *nostr.Event
		author int
	}
	var drafts []draft
	add := func(author, kind int, at int64, content string, tags nostr.Tags) *nostr.Event {
		// The id now, since replies and reactions name it; the signature
		// later, in parallel.
		ev := &nostr.Event{PubKey: pubkeys[author], CreatedAt: nostr.Timestamp(at), Kind: kind, Tags: tags, Content: content}
		ev.ID = ev.GetID()
		drafts = append(drafts, draft{ev, author})
		return ev
	}
	// Channel 0 and every even one is created open by author 0; the odd
	// ones are private, with every author a member (NIP-29 lifecycle).
	for ci, ch := range c.Channels {
		tags := nostr.Tags{{"h", ch}, {"name", fmt.Sprintf("channel %d", ci)}}
		if ci%2 == 1 {
			tags = append(tags, nostr.Tag{"private"})
		}
		add(0, 9007, o.Start-10, "", tags)
		if ci%2 == 1 {
			members := nostr.Tags{{"h", ch}}
			for _, pk := range pubkeys[1:] {
				members = append(members, nostr.Tag{"p", pk})
			}
			add(0, 9000, o.Start-9, "", members)
		}
	}
	at := o.Start
	for m := range o.TopLevel {
		for ci, ch := range c.Channels {
			if rng.IntN(100) >= o.BurstPercent {
				at++
			}
			author := rng.IntN(o.Authors)
			root := add(author, 9, at, fmt.Sprintf("message %d in channel %d", m, ci), nostr.Tags{{"h", ch}})
			// Replies: a random tree, parents before children.
			type node struct {
				ev    *nostr.Event
				depth int
			}
			nodes := []node{{root, 0}}
			n := rng.IntN(2*o.Replies + 1)
			for r := range n {
				parent := nodes[rng.IntN(len(nodes))]
				if parent.depth >= o.MaxDepth {
					parent = nodes[0]
				}
				tags := nostr.Tags{{"h", ch}, {"e", root.ID, "", "root"}, {"e", parent.ev.ID, "", "reply"}}
				if parent.depth == 0 && rng.IntN(100) < o.BroadcastPercent {
					tags = append(tags, nostr.Tag{"broadcast", "1"})
				}
				reply := add(rng.IntN(o.Authors), 9, at+int64(1+r), fmt.Sprintf("reply %d", r), tags)
				nodes = append(nodes, node{reply, parent.depth + 1})
			}
			// Distinct reactors: one author's two "+" in a second would be
			// one event.
			for _, reactor := range rng.Perm(o.Authors)[:min(o.Authors, rng.IntN(2*o.Reactions+1))] {
				reaction := add(reactor, 7, at+1, "+", nostr.Tags{{"h", ch}, {"e", root.ID}})
				if rng.IntN(100) < o.DeletePercent*3 {
					add(reactor, 5, at+2, "", nostr.Tags{{"e", reaction.ID}})
				}
			}
			if rng.IntN(100) < o.EditPercent {
				add(author, 40003, at+2, "edited", nostr.Tags{{"h", ch}, {"e", root.ID}})
			}
			if rng.IntN(100) < o.DeletePercent && n == 0 {
				add(author, 5, at+3, "", nostr.Tags{{"e", root.ID}})
			}
		}
	}

	// go-nostr signs deterministically, so the result is deterministic too.
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(drafts); i += workers {
				if err := drafts[i].ev.Sign(c.Authors[drafts[i].author]); err != nil {
					select {
					case errs <- fmt.Errorf("sign: %w", err):
					default:
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	c.Events = make([]*nostr.Event, len(drafts))
	for i, d := range drafts {
		c.Events[i] = d.ev
	}
	return c, nil
}

// Split parts the events into the channels' lifecycle events (creation,
// members), which must be stored before anything is posted in them, and
// the rest, each in order.
func (c *Community) Split() (lifecycle, rest []*nostr.Event) {
	for _, ev := range c.Events {
		if buzz.IsLifecycleKind(ev.Kind) {
			lifecycle = append(lifecycle, ev)
		} else {
			rest = append(rest, ev)
		}
	}
	return lifecycle, rest
}

// key derives a secret key from the seed.
func key(seed uint64, what string, i int) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seed)
	h := sha256.Sum256(fmt.Appendf(b[:], "%s %d", what, i))
	return hex.EncodeToString(h[:])
}
