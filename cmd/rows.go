package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/nbd-wtf/go-nostr/nip19"
)

// How the client commands print events (window, feed): a row a line, or
// with --json a JSON object a line, untrusted text made safe for a
// terminal.

// windowRow is a timeline row as `window --json` prints it.
type windowRow struct {
	ID     string `json:"id"`
	PubKey string `json:"pubkey"`
	// Name is the author's as their kind 0 profile gives it, "" for none:
	// the terminal shows it instead of the short npub, as the web view.
	Name      string `json:"name,omitempty"`
	CreatedAt int64  `json:"created_at"`
	Content   string `json:"content"`
	Edited    bool   `json:"edited"`
	// Deleted marks a row whose deletion the page's aux closure holds: a
	// relay may serve a deletion it did not apply (not by the author, say).
	Deleted   bool  `json:"deleted,omitempty"`
	Replies   int64 `json:"replies"`
	Reactions int   `json:"reactions"`
	// ReplyTo is set on a live message that replies to another, and on a
	// reply of `--thread`.
	ReplyTo string `json:"reply_to,omitempty"`
	// Depth is a reply's depth below the root of `--thread` (the root: 0).
	Depth int `json:"depth,omitempty"`
}

// printJSONLine prints v as one line of JSON, as --json prints a row.
func printJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func printRow(w io.Writer, row windowRow, asJSON bool) error {
	if asJSON {
		return printJSONLine(w, row)
	}
	author := row.PubKey
	if row.Name != "" {
		author = clipRunes(terminalText(row.Name), nameRunes)
	} else if npub, err := nip19.EncodePublicKey(row.PubKey); err == nil {
		author = npub[:12] + "…"
	}
	var marks []string
	if row.Replies > 0 {
		marks = append(marks, plural(row.Replies, "reply", "replies"))
	}
	if row.Reactions > 0 {
		marks = append(marks, plural(row.Reactions, "reaction", "reactions"))
	}
	if row.Edited {
		marks = append(marks, "edited")
	}
	if row.Deleted {
		marks = append(marks, "deleted")
	}
	if row.ReplyTo != "" && row.Depth == 0 {
		// A live reply; a thread's replies show theirs by indentation.
		marks = append(marks, "reply to "+row.ReplyTo[:8])
	}
	line := fmt.Sprintf("%s%s  %s  %s", strings.Repeat("  ", row.Depth), time.Unix(row.CreatedAt, 0).UTC().Format("2006-01-02 15:04:05"), author,
		terminalText(row.Content))
	if len(marks) > 0 {
		line += "  [" + strings.Join(marks, ", ") + "]"
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// terminalText is untrusted text made fit for one line of a terminal:
// line breaks and tabs become spaces, and control and format characters
// (escape sequences, carriage returns, bidi overrides) become U+FFFD, so
// that an author can neither move the reader's cursor, rewrite the screen,
// nor make the line read otherwise than it is.
func terminalText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return unicode.ReplacementChar
		}
		return r
	}, s)
}

// nameRunes bounds an author's name on a line, as the web view bounds it.
const nameRunes = 48

// clipRunes is s cut to n runes, an ellipsis marking the cut.
func clipRunes(s string, n int) string {
	i := 0
	for at := range s {
		if i == n {
			return s[:at] + "…"
		}
		i++
	}
	return s
}
