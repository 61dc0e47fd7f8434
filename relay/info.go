package relay

import (
	"encoding/json"
	"net/http"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// Info is what the operator says about the relay in NIP-11.
type Info struct {
	Name        string
	Description string
	Contact     string
	// PubKey is the operator's pubkey; empty means the relay's own (RL-21).
	PubKey string
	// Version is the software version.
	Version string
}

// infoDocument is the NIP-11 relay information document. It is ours rather
// than go-nostr's, whose struct has no `self`.
type infoDocument struct {
	Name          string `json:"name"`
	Description   string `json:"description,omitempty"`
	PubKey        string `json:"pubkey"`
	Self          string `json:"self"`
	Contact       string `json:"contact,omitempty"`
	SupportedNIPs []int  `json:"supported_nips"`
	// SupportedExtensions names the extensions of NIP-11 beyond the NIPs:
	// "nip-cw" is the channel window on `POST /query` (RL-22), "nip-cw-feed"
	// the home feed beside it (RL-35).
	SupportedExtensions []string   `json:"supported_extensions"`
	Software            string     `json:"software"`
	Version             string     `json:"version"`
	Limitation          limitation `json:"limitation"`
	// ThreadRepliesInChannel is the community setting of RL-15.
	ThreadRepliesInChannel bool `json:"thread_replies_in_channel"`
}

type limitation struct {
	MaxMessageLength int64 `json:"max_message_length"`
	MaxSubscriptions int   `json:"max_subscriptions"`
	MaxFilters       int   `json:"max_filters"`
	MaxContentLength int   `json:"max_content_length"`
	MaxEventTags     int   `json:"max_event_tags"`
	MaxLimit         int   `json:"max_limit"`
	DefaultLimit     int   `json:"default_limit"`
	CreatedAtUpper   int64 `json:"created_at_upper_limit"`
	AuthRequired     bool  `json:"auth_required"`
	PaymentRequired  bool  `json:"payment_required"`
	RestrictedWrites bool  `json:"restricted_writes"`
}

// Software is the NIP-11 `software` of buzz-lite.
const Software = "https://github.com/buzz-lite/buzz-lite"

func (r *Relay) infoDocument() infoDocument {
	pubkey := r.cfg.Info.PubKey
	if pubkey == "" {
		pubkey = r.pubkey
	}
	community := r.store.Community()
	return infoDocument{
		Name:                r.cfg.Info.Name,
		Description:         r.cfg.Info.Description,
		PubKey:              pubkey,
		Self:                r.pubkey,
		Contact:             r.cfg.Info.Contact,
		SupportedNIPs:       []int{1, 9, 10, 11, 29, 40, 42, 45, 70, 77, 98},
		SupportedExtensions: []string{"nip-cw", nipcw.FeedExtension},
		Software:            Software,
		Version:             r.cfg.Info.Version,
		Limitation: limitation{
			MaxMessageLength: r.cfg.Limits.MaxMessageBytes,
			MaxSubscriptions: r.cfg.Limits.MaxSubscriptions,
			MaxFilters:       r.cfg.Limits.MaxFilters,
			MaxContentLength: r.cfg.Limits.MaxEventBytes,
			MaxEventTags:     r.cfg.Limits.MaxEventTags,
			MaxLimit:         r.cfg.Limits.MaxLimit,
			DefaultLimit:     r.cfg.Limits.MaxLimit,
			CreatedAtUpper:   int64(buzz.MaxFuture.Seconds()),
			AuthRequired:     !community.Policy.PublicRead,
			RestrictedWrites: community.Policy.RestrictedWrites(),
		},
		ThreadRepliesInChannel: community.ThreadRepliesInChannel,
	}
}

func (r *Relay) serveInfo(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/nostr+json")
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Headers", "*")
	h.Set("Access-Control-Allow-Methods", "GET")
	if err := json.NewEncoder(w).Encode(r.infoDocument()); err != nil {
		r.log.Debug("writing NIP-11 document", "err", err)
	}
}
