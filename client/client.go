// Package client is the reference channel window client (issue 5): it reads
// a channel's top-level timeline from a buzz-lite relay through the window
// on `POST /query` (CW-1..CW-20, CL-1..CL-6), validating every page with
// nipcw, and falls back to standard NIP-01 filters over WebSocket when the
// relay does not offer the window or serves no usable page (CW-24),
// assembling the same rows itself.
//
// It speaks only the wire: it has no dependency on the relay or the store
// packages of buzz-lite, only on nipcw (the contract's client side) and
// buzz (the NIP-10 parser).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// Options configure a Client.
type Options struct {
	// Relay is the relay's ws:// or wss:// URL.
	Relay string
	// Key is an optional secret key (hex): when set, every `/query` request
	// carries a NIP-98 authorization signed with it (RL-17); else requests
	// are anonymous.
	Key string
	// RelayPubKey is the trusted relay identity key (hex) that must sign
	// every overlay (CL-3); "" takes the NIP-11 `self` of the relay.
	RelayPubKey string
	// HTTP is the client for NIP-11 and `/query`; nil means
	// http.DefaultClient.
	HTTP *http.Client
}

// Client reads channel timelines from one relay.
type Client struct {
	wsURL    string // ws(s)://host[:port][/path]
	httpURL  string // http(s)://... of the same relay
	queryURL string // httpURL + /query
	key      string
	http     *http.Client

	// relayKey is the key overlays must be signed by; "" with tls trusts
	// the transport (CL-3).
	relayKey string
	tls      bool
	// window: the relay advertises "nip-cw" in NIP-11 supported_extensions.
	window bool
	// feed: it advertises the home feed, nipcw.FeedExtension.
	feed bool
	// projection is the NIP-11 thread_replies_in_channel, used by the
	// fallback's row rule (CW-13).
	projection bool
	// negentropy: the relay advertises NIP-77 in supported_nips (RL-34).
	negentropy bool

	// retries is how many times an unusable page is fetched again before
	// Page fails; batch is the limit of one fallback REQ; threadLimit that
	// of one thread page (RL-20).
	retries     int
	batch       int
	threadLimit int
}

// info is the part of a NIP-11 document the client reads.
type info struct {
	Self                   string   `json:"self"`
	SupportedExtensions    []string `json:"supported_extensions"`
	SupportedNIPs          []int    `json:"supported_nips"`
	ThreadRepliesInChannel bool     `json:"thread_replies_in_channel"`
}

// New makes a client of the relay at o.Relay and reads its NIP-11 document:
// `self` (the overlay signer, unless o.RelayPubKey is set) and
// `supported_extensions` (whether it offers the window, "nip-cw").
func New(ctx context.Context, o Options) (*Client, error) {
	u, err := url.Parse(o.Relay)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("client: relay URL %q: want ws:// or wss://", o.Relay)
	}
	c := &Client{key: o.Key, http: o.HTTP, retries: 2, batch: 500, threadLimit: nipcw.MaxThreadLimit}
	switch strings.ToLower(u.Scheme) {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
		c.tls = true
	default:
		return nil, fmt.Errorf("client: relay URL %q: want ws:// or wss://", o.Relay)
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if o.Key != "" {
		if _, err := nostr.GetPublicKey(o.Key); err != nil || !nostr.IsValid32ByteHex(o.Key) {
			return nil, errors.New("client: key: want 64 hex characters of a valid secret key")
		}
	}
	if o.RelayPubKey != "" && !nostr.IsValid32ByteHex(strings.ToLower(o.RelayPubKey)) {
		return nil, errors.New("client: relay pubkey: want 64 hex characters")
	}
	c.httpURL = strings.TrimSuffix(u.String(), "/")
	c.queryURL = c.httpURL + "/query"
	ws := *u
	ws.Scheme = map[bool]string{false: "ws", true: "wss"}[c.tls]
	c.wsURL = ws.String()

	doc, err := c.fetchInfo(ctx)
	if err != nil {
		return nil, err
	}
	c.window = slices.Contains(doc.SupportedExtensions, "nip-cw")
	c.feed = slices.Contains(doc.SupportedExtensions, nipcw.FeedExtension)
	c.negentropy = slices.Contains(doc.SupportedNIPs, 77)
	c.projection = doc.ThreadRepliesInChannel
	c.relayKey = strings.ToLower(o.RelayPubKey)
	if c.relayKey == "" && nostr.IsValid32ByteHex(strings.ToLower(doc.Self)) {
		c.relayKey = strings.ToLower(doc.Self)
	}
	return c, nil
}

// SupportsWindow reports whether the relay advertises the window (NIP-11
// supported_extensions holds "nip-cw").
func (c *Client) SupportsWindow() bool { return c.window }

// RelayKey is the key the client requires of overlays; "" when it trusts
// an authenticated transport instead (CL-3).
func (c *Client) RelayKey() string { return c.relayKey }

func (c *Client) fetchInfo(ctx context.Context) (*info, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.httpURL, nil)
	if err != nil {
		return nil, fmt.Errorf("client: NIP-11: %w", err)
	}
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: NIP-11: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("client: NIP-11: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("client: NIP-11: HTTP %d", resp.StatusCode)
	}
	var doc info
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("client: NIP-11: %w", err)
	}
	return &doc, nil
}

// windowFilter is the `/query` filter of one window page (CW-1..CW-5).
func windowFilter(channel string, cursor *nipcw.Cursor, limit int) map[string]any {
	f := map[string]any{
		"kinds":             []int{9},
		"#h":                []string{channel},
		"limit":             limit,
		"top_level":         true,
		"include_summaries": true,
		"include_aux":       true,
	}
	if cursor != nil {
		f["until"] = cursor.CreatedAt
		f["before_id"] = strings.ToLower(cursor.ID)
	}
	return f
}

// HTTPError is a `/query` answer other than 200: the relay refused the
// request (400, 401) or failed.
type HTTPError struct {
	Status  int
	Message string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("client: /query: HTTP %d: %s", e.Status, e.Message)
}

// ClosedError is a subscription the relay closed (NIP-01 CLOSED).
type ClosedError struct {
	// Where is the read that was refused: "websocket" for the fallback's
	// pages, "live" for the tail.
	Where string
	// Reason is the relay's machine-readable reason ("auth-required: ...").
	Reason string
}

func (e *ClosedError) Error() string {
	return fmt.Sprintf("client: %s: subscription closed: %s", e.Where, e.Reason)
}

// AuthRequired reports whether the relay wants authentication first: the
// answer, to a reader without a key, of a private channel and of one that
// does not exist alike (RL-13).
func (e *ClosedError) AuthRequired() bool { return strings.HasPrefix(e.Reason, "auth-required: ") }

// Page fetches one window page of channel at cursor (nil: the head) with
// limit rows at most (the relay clamps it to 1..200, CW-4) and validates
// it against the channel, the cursor sent and the relay key (CL-2, CL-3).
// An unusable page is fetched again a couple of times, then Page fails
// with the validator's *nipcw.PageError. A relay that cannot be trusted
// (no known key and no TLS) is an error: use Timeline, which falls back.
func (c *Client) Page(ctx context.Context, channel string, cursor *nipcw.Cursor, limit int) (*nipcw.Page, error) {
	ch, ok := nipcw.ParseChannelID(channel)
	if !ok {
		return nil, fmt.Errorf("client: channel %q is not a channel id (a UUID or a NIP-29 group id)", channel)
	}
	if c.relayKey == "" && !c.tls {
		return nil, errors.New("client: no relay key and no TLS: the window cannot be trusted (CL-3)")
	}
	body, err := json.Marshal([]any{windowFilter(ch, cursor, limit)})
	if err != nil {
		return nil, err
	}
	var last error
	for attempt := 0; attempt <= c.retries; attempt++ {
		evs, err := c.query(ctx, body)
		if err != nil {
			return nil, err
		}
		p, err := nipcw.ValidatePage(evs, ch, cursor, c.relayKey)
		if err == nil {
			return p, nil
		}
		var pe *nipcw.PageError
		if !errors.As(err, &pe) {
			return nil, err
		}
		last = err
	}
	return nil, last
}

// query posts body to `/query` and decodes the event array it answers.
func (c *Client) query(ctx context.Context, body []byte) ([]*nostr.Event, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.queryURL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("client: /query: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		auth, err := c.nip98(body)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: /query: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("client: /query: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return nil, &HTTPError{Status: resp.StatusCode, Message: msg}
	}
	var evs []*nostr.Event
	if err := json.Unmarshal(data, &evs); err != nil {
		return nil, fmt.Errorf("client: /query: response is not an event array: %w", err)
	}
	return evs, nil
}

// nip98 is the Authorization header for a POST of body to `/query`
// (RL-17), signed with the client's key.
func (c *Client) nip98(body []byte) (string, error) {
	auth, err := nipcw.AuthHeader(c.key, c.queryURL, body)
	if err != nil {
		return "", fmt.Errorf("client: %w", err)
	}
	return auth, nil
}
