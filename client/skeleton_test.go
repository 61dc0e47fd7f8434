package client

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// skeletonAgrees reports why skeleton(ev) would place differently from ev,
// or "": the same channel (or the same failure to have one), thread tags
// and broadcast flag.
func skeletonAgrees(ev *nostr.Event) string {
	s := skeleton(ev)
	h, err := buzz.ChannelOf(ev.Tags)
	sh, serr := buzz.ChannelOf(s.Tags)
	if h != sh || (err == nil) != (serr == nil) {
		return "channel " + h + " became " + sh
	}
	if a, b := buzz.ParseThreadTags(ev.Tags), buzz.ParseThreadTags(s.Tags); a != b {
		return "thread tags differ"
	}
	if s.ID != ev.ID || s.Kind != ev.Kind || s.CreatedAt != ev.CreatedAt {
		return "identity differs"
	}
	return ""
}

// CL-4: the live tail remembers messages as skeletons, which the row rule
// reads as it reads the messages, whatever their tags.
func TestSkeletonPlacesAsTheMessage(t *testing.T) {
	a, b := strings.Repeat("a1", 32), strings.Repeat("B2", 32)
	for name, tags := range map[string]nostr.Tags{
		"top-level":          {{"h", testChannel}},
		"root only":          {{"h", testChannel}, {"e", a, "", "root"}},
		"reply only":         {{"h", testChannel}, {"e", b, "", "reply"}},
		"root and reply":     {{"h", testChannel}, {"e", a, "", "root"}, {"e", b, "wss://x", "reply", "pk"}},
		"same root twice":    {{"e", a, "", "root"}, {"e", b, "", "root"}, {"h", testChannel}},
		"broadcast":          {{"h", testChannel}, {"e", a, "", "root"}, {"broadcast", "1"}},
		"two channels":       {{"h", testChannel}, {"h", "abc123"}},
		"bad channel":        {{"h", "Not A Channel"}},
		"no channel":         {{"e", a, "", "root"}},
		"malformed markers":  {{"h", testChannel}, {"e", a[:63], "", "root"}, {"e", b, "", "mention"}, {"e", a}},
		"uppercase UUID":     {{"h", strings.ToUpper(testChannel)}},
		"big unrelated tags": {{"h", testChannel}, {"t", strings.Repeat("x", 10000)}, {"p", a}},
	} {
		ev := &nostr.Event{ID: a, Kind: 9, CreatedAt: 5, Content: strings.Repeat("c", 5000), Tags: tags}
		if why := skeletonAgrees(ev); why != "" {
			t.Errorf("%s: %s", name, why)
		}
		if n := len(skeleton(ev).Tags); n > 4 {
			t.Errorf("%s: skeleton keeps %d tags", name, n)
		}
	}
}

func FuzzSkeletonPlacesAsTheMessage(f *testing.F) {
	f.Add(`[["h","abc123"],["e","` + strings.Repeat("a", 64) + `","","root"]]`)
	f.Add(`[["h","` + testChannel + `"],["e","` + strings.Repeat("b", 64) + `","","reply"],["broadcast","1"]]`)
	f.Fuzz(func(t *testing.T, tagsJSON string) {
		var tags nostr.Tags
		if json.Unmarshal([]byte(tagsJSON), &tags) != nil {
			return
		}
		if why := skeletonAgrees(&nostr.Event{ID: "x", Kind: 9, Tags: tags}); why != "" {
			t.Errorf("%s: %s", tagsJSON, why)
		}
	})
}
