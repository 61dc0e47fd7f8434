package web

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// view is what a page template shows.
type view struct {
	Title, Relay, Description string
	CSS                       string
	// Script is the client's module, NIP46 the module it imports for a
	// bunker sign-in, and RelayURL the relay's public ws(s):// URL it
	// connects to (CW-26).
	Script, NIP46, RelayURL string
	// Channels and More are the index: the channels an anonymous reader
	// can read, and the link to the next page of them.
	Channels []channelItem
	More     string
	// Channel is the channel of a channel or thread page.
	Channel *channelItem
	// Rows and Older are a channel page: its rows, newest first, and the
	// link to the page from its next_cursor.
	Rows  []*row
	Older string
	// Root is a thread page's root, its replies nested below it, and
	// Later the link to the replies that follow.
	Root  *row
	Later string
}

type channelItem struct {
	Name, About, URL string
	LastActive       *pageTime
}

// channelItemOf is ch as a page names and links it.
func channelItemOf(ch *buzz.Channel) channelItem {
	return channelItem{Name: channelName(ch), About: clip(ch.About, aboutRunes), URL: pageLink(ch.H, "", nil)}
}

func channelName(ch *buzz.Channel) string {
	if name := clip(ch.Name, nameRunes); name != "" {
		return name
	}
	return ch.H
}

type pageTime struct {
	// UTC is the time in UTC, ISO its machine form, Ago how long before
	// the page it was.
	UTC, ISO, Ago string
}

type row struct {
	ID      string
	Author  author
	At      pageTime
	Content []contentPart
	// Clipped says Content is the start of a longer content, and Whole
	// links to the page that shows more of it, the row's thread page
	// ("" on that page).
	Clipped bool
	Whole   string
	// Deleted stands for a thread's deleted root, of which nothing is
	// shown but the place.
	Deleted   bool
	Edited    bool
	Reactions int
	// Replies is the whole thread below the row (descendant_count), as
	// chat clients badge a thread, not its direct replies only.
	Replies int64
	// Thread links to the row's thread page.
	Thread string
	// ReplyTo is the short id of the parent of a reply whose parent is on
	// an earlier thread page.
	ReplyTo  string
	Depth    int
	Children []*row
}

type author struct {
	// Name is the kind 0 display name, or else the short npub.
	Name, NPub string
}

// profileName is the name a kind 0 profile's content gives: display_name,
// else name, cleaned of control and formatting characters and clipped;
// "" when it gives none.
func profileName(content string) string {
	return buzz.ProfileName(content, func(s string) string { return clip(s, nameRunes) })
}

// clip is s without control and formatting characters (bidi overrides
// among them, which would turn the text around it), without surrounding
// space, and at most n runes.
func clip(s string, n int) string {
	var b strings.Builder
	runes := 0
	for _, c := range s {
		if c == utf8.RuneError || unicode.IsControl(c) || unicode.Is(unicode.Cf, c) {
			c = ' '
		}
		if runes == n {
			b.WriteString("…")
			break
		}
		b.WriteRune(c)
		runes++
	}
	return strings.TrimSpace(b.String())
}

// auxIndex is a page's aux closure by target: reactions counted, and the
// newest edit of each author.
type auxIndex struct {
	reactions map[string]int
	edits     map[[2]string]*nostr.Event // target id, author
}

func indexAux(aux []*nostr.Event) auxIndex {
	a := auxIndex{reactions: map[string]int{}, edits: map[[2]string]*nostr.Event{}}
	for _, ev := range aux {
		switch ev.Kind {
		case buzz.KindReaction:
			a.reactions[strings.ToLower(buzz.ScopeTarget(ev))]++
		case buzz.KindEdit:
			tag := ev.Tags.Find("e")
			if tag == nil {
				continue
			}
			k := [2]string{strings.ToLower(tag[1]), ev.PubKey}
			if old := a.edits[k]; old == nil || ev.CreatedAt > old.CreatedAt {
				a.edits[k] = ev
			}
		}
	}
	return a
}

// rowBuilder makes the rows of one page.
type rowBuilder struct {
	channel string
	now     time.Time
	names   map[string]string
	aux     auxIndex
	replies map[string]int64
}

// row is ev as a page shows it, its content clipped to limit bytes of
// text.
func (b rowBuilder) row(ev *nostr.Event, limit int) *row {
	content := ev.Content
	edit := b.aux.edits[[2]string{ev.ID, ev.PubKey}]
	if edit != nil {
		content = edit.Content
	}
	parts, clipped := linkify(content, limit)
	r := &row{
		ID:        ev.ID,
		Author:    authorOf(ev.PubKey, b.names),
		At:        newTime(int64(ev.CreatedAt), b.now),
		Content:   parts,
		Clipped:   clipped,
		Edited:    edit != nil,
		Reactions: b.aux.reactions[ev.ID],
		Replies:   b.replies[ev.ID],
		Thread:    pageLink(b.channel, ev.ID, nil),
	}
	if clipped {
		r.Whole = r.Thread
	}
	return r
}

func authorOf(pubkey string, names map[string]string) author {
	npub, err := nip19.EncodePublicKey(pubkey)
	if err != nil {
		npub = pubkey
	}
	short := npub
	if len(short) > 12 {
		short = short[:12] + "…"
	}
	if name := names[pubkey]; name != "" {
		return author{Name: name, NPub: npub}
	}
	return author{Name: short, NPub: npub}
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func newTime(unix int64, now time.Time) pageTime {
	t := time.Unix(unix, 0).UTC()
	return pageTime{UTC: t.Format("2006-01-02 15:04 UTC"), ISO: t.Format(time.RFC3339), Ago: ago(now.Sub(t))}
}

// ago says how long d is, roughly, as a reader wants it next to a time.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min ago"
	case d < 24*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h ago"
	case d < 60*24*time.Hour:
		return strconv.Itoa(int(d/(24*time.Hour))) + " d ago"
	case d < 2*365*24*time.Hour:
		return strconv.Itoa(int(d/(30*24*time.Hour))) + " months ago"
	}
	return strconv.Itoa(int(d/(365*24*time.Hour))) + " years ago"
}
