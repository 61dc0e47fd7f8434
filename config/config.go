// Package config loads buzz-lite's configuration: embedded defaults, then a
// TOML file, then BUZZ_LITE_<SECTION>_<KEY> environment variables; the
// command line applies its flags on top (RL-24). Every key is documented in
// config.example.toml.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/relay"
	"github.com/buzz-lite/buzz-lite/web"
)

// Config is the whole configuration.
type Config struct {
	Relay     Relay     `toml:"relay"`
	Server    Server    `toml:"server"`
	Storage   Storage   `toml:"storage"`
	Access    Access    `toml:"access"`
	Community Community `toml:"community"`
	Limits    Limits    `toml:"limits"`
	Log       Log       `toml:"log"`
}

// Relay describes the relay to clients (NIP-11) and names its admins.
type Relay struct {
	Name        string   `toml:"name"`
	Description string   `toml:"description"`
	Contact     string   `toml:"contact"`
	PubKey      string   `toml:"pubkey"`
	URL         string   `toml:"url"`
	Admins      []string `toml:"admins"`
	KeyFile     string   `toml:"key_file"`
}

// Server is the listening socket.
type Server struct {
	Listen string `toml:"listen"`
	// TrustedProxies are CIDRs of reverse proxies whose X-Forwarded-For
	// (or X-Real-IP) names the client IP (RL-28).
	TrustedProxies []string `toml:"trusted_proxies"`
	// Metrics serves `GET /metrics` (RL-30).
	Metrics bool `toml:"metrics"`
	// MetricsAllow are the CIDRs of the clients (RL-28's client IP) that
	// `GET /metrics` answers; any other gets 404 (RL-30).
	MetricsAllow []string `toml:"metrics_allow"`
	// Web serves the read-only HTML view of the open channels (CW-25).
	Web bool `toml:"web"`
	// WebConnectAllow are the ws:// or wss:// origins, beyond its own,
	// the web client's pages may connect to (CSP connect-src): the relays
	// of members' NIP-46 bunkers (CW-26). Empty: none.
	WebConnectAllow []string `toml:"web_connect_allow"`
}

// Storage is where the data lives and what of it is kept in memory.
type Storage struct {
	DataDir string `toml:"data_dir"`
	// PageCacheBytes bounds the window page cache in bytes (the pages'
	// events, summaries and bookkeeping); 0 turns the cache off.
	PageCacheBytes int64 `toml:"page_cache_bytes"`
	// MapReads lets the read connections map the SQLite database file
	// (64-bit builds): deep pages of a large channel cost a third less.
	// Off, an I/O error reading the file is an error of the request
	// instead of the end of the process (SIGBUS), for a database on a
	// storage card that may fail.
	MapReads bool `toml:"map_reads"`
	// Postgres is the URL of a PostgreSQL database to keep everything in
	// instead of the data directory's SQLite file (RL-33); the data
	// directory then holds only the relay key.
	Postgres string `toml:"postgres"`
}

// Access is who may read, write and create channels (RL-10, RL-12, RL-14).
type Access struct {
	PublicRead     bool   `toml:"public_read"`
	OpenWrite      bool   `toml:"open_write"`
	CreateChannels string `toml:"create_channels"`
	// AllowedPubkeys may write even with open_write off; BlockedPubkeys
	// may not write at all; AllowedKinds, when not empty, are the only
	// kinds accepted (RL-29).
	AllowedPubkeys []string `toml:"allowed_pubkeys"`
	BlockedPubkeys []string `toml:"blocked_pubkeys"`
	AllowedKinds   []int    `toml:"allowed_kinds"`
}

// Policy is the access configuration as the domain knows it; admins are
// the relay admins. Pubkeys are taken as Normalize left them (hex).
func (a Access) Policy(admins []string) (buzz.Policy, error) {
	create, err := buzz.ParseCreatePolicy(a.CreateChannels)
	if err != nil {
		return buzz.Policy{}, fmt.Errorf("access.create_channels: %w", err)
	}
	p := buzz.Policy{PublicRead: a.PublicRead, OpenWrite: a.OpenWrite, Create: create,
		Admins: set(admins), Allowed: set(a.AllowedPubkeys), Blocked: set(a.BlockedPubkeys), Kinds: set(a.AllowedKinds)}
	return p, nil
}

// set is the set of the members of list.
func set[T comparable](list []T) map[T]bool {
	m := make(map[T]bool, len(list))
	for _, v := range list {
		m[v] = true
	}
	return m
}

// Community holds the community settings (RL-15).
type Community struct {
	ThreadRepliesInChannel bool `toml:"thread_replies_in_channel"`
}

// Limits bound what one client may send, hold and do (RL-27, RL-27a).
// Rates are per second unless the key says otherwise.
type Limits struct {
	MaxMessageBytes int64 `toml:"max_message_bytes"`
	MaxEventBytes   int   `toml:"max_event_bytes"`
	MaxEventTags    int   `toml:"max_event_tags"`
	MaxLimit        int   `toml:"max_limit"`

	MaxSubscriptions          int   `toml:"max_subscriptions"`
	MaxFilters                int   `toml:"max_filters"`
	MaxConnectionsPerIP       int   `toml:"max_connections_per_ip"`
	ConnectionBufferBytes     int64 `toml:"connection_buffer_bytes"`
	MaxConcurrentQueries      int   `toml:"max_concurrent_queries"`
	MaxConcurrentQueriesPerIP int   `toml:"max_concurrent_queries_per_ip"`
	QueryMemoryBytes          int64 `toml:"query_memory_bytes"`
	QueryMemoryBytesPerIP     int64 `toml:"query_memory_bytes_per_ip"`
	SyncSessions              int   `toml:"sync_sessions"`
	SyncItems                 int   `toml:"sync_items"`
	SyncMemoryBytes           int64 `toml:"sync_memory_bytes"`
	HeaderTimeoutSeconds      int   `toml:"header_timeout_seconds"`
	BodyTimeoutSeconds        int   `toml:"body_timeout_seconds"`
	IPv6Prefix                int   `toml:"ipv6_prefix"`

	Rates                   bool     `toml:"rates"`
	IPEventsPerSecond       int      `toml:"ip_events_per_second"`
	IPEventsBurst           int      `toml:"ip_events_burst"`
	PubkeyEventsPerSecond   int      `toml:"pubkey_events_per_second"`
	PubkeyEventsBurst       int      `toml:"pubkey_events_burst"`
	ConnectionReqsPerSecond int      `toml:"connection_reqs_per_second"`
	ConnectionReqsBurst     int      `toml:"connection_reqs_burst"`
	IPQueriesPerSecond      int      `toml:"ip_queries_per_second"`
	IPQueriesBurst          int      `toml:"ip_queries_burst"`
	PubkeyChannelsPerHour   int      `toml:"pubkey_channels_per_hour"`
	PubkeyChannelsBurst     int      `toml:"pubkey_channels_burst"`
	Exempt                  []string `toml:"exempt"`
}

// Relay is the limits as the relay takes them: rates only when on, and
// the exempt networks parsed (Normalize has checked them).
func (l Limits) Relay() relay.Limits {
	out := relay.Limits{
		MaxMessageBytes:           l.MaxMessageBytes,
		MaxEventBytes:             l.MaxEventBytes,
		MaxEventTags:              l.MaxEventTags,
		MaxLimit:                  l.MaxLimit,
		MaxSubscriptions:          l.MaxSubscriptions,
		MaxFilters:                l.MaxFilters,
		MaxConnectionsPerIP:       l.MaxConnectionsPerIP,
		ConnectionBufferBytes:     l.ConnectionBufferBytes,
		MaxConcurrentQueries:      l.MaxConcurrentQueries,
		MaxConcurrentQueriesPerIP: l.MaxConcurrentQueriesPerIP,
		QueryMemoryBytes:          l.QueryMemoryBytes,
		QueryMemoryBytesPerIP:     l.QueryMemoryBytesPerIP,
		MaxSyncSessions:           l.SyncSessions,
		MaxSyncItems:              l.SyncItems,
		SyncMemoryBytes:           l.SyncMemoryBytes,
		HeaderTimeout:             time.Duration(l.HeaderTimeoutSeconds) * time.Second,
		BodyTimeout:               time.Duration(l.BodyTimeoutSeconds) * time.Second,
		IPv6Prefix:                l.IPv6Prefix,
	}
	out.Exempt, _ = prefixes(l.Exempt)
	if l.Rates {
		out.Rates = &relay.Rates{
			EventsPerIP:       relay.Rate{PerSecond: float64(l.IPEventsPerSecond), Burst: l.IPEventsBurst},
			EventsPerPubkey:   relay.Rate{PerSecond: float64(l.PubkeyEventsPerSecond), Burst: l.PubkeyEventsBurst},
			ReqsPerConnection: relay.Rate{PerSecond: float64(l.ConnectionReqsPerSecond), Burst: l.ConnectionReqsBurst},
			QueriesPerIP:      relay.Rate{PerSecond: float64(l.IPQueriesPerSecond), Burst: l.IPQueriesBurst},
			ChannelsPerPubkey: relay.Rate{PerSecond: float64(l.PubkeyChannelsPerHour) / 3600, Burst: l.PubkeyChannelsBurst},
		}
	}
	return out
}

// TrustedProxyNets are server.trusted_proxies parsed (Normalize has checked
// them).
func (s Server) TrustedProxyNets() []netip.Prefix {
	p, _ := prefixes(s.TrustedProxies)
	return p
}

// MetricsAllowNets are server.metrics_allow parsed (Normalize has checked
// them).
func (s Server) MetricsAllowNets() []netip.Prefix {
	p, _ := prefixes(s.MetricsAllow)
	return p
}

// prefixes parses CIDRs; a bare address is a network of one.
func prefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("want a CIDR such as 10.0.0.0/8 or an address, got %q", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Log configures the structured log.
type Log struct {
	Level string `toml:"level"`
	// Format is text or json (RL-30).
	Format string `toml:"format"`
}

// Default is the embedded default: `buzz-lite serve` with no arguments
// (RL-24).
func Default() Config {
	return Config{
		Relay:   Relay{Name: "buzz-lite", Description: "A buzz-lite community relay"},
		Server:  Server{Listen: "127.0.0.1:7777", Metrics: true, MetricsAllow: []string{"127.0.0.0/8", "::1/128"}, Web: true},
		Storage: Storage{DataDir: "./buzz-lite-data", PageCacheBytes: 16 << 20, MapReads: true},
		Access:  Access{PublicRead: true, OpenWrite: true, CreateChannels: string(buzz.CreateByAnyone)},
		Limits:  defaultLimits(),
		Log:     Log{Level: "info", Format: "text"},
	}
}

func defaultLimits() Limits {
	d, r := relay.DefaultLimits, relay.DefaultRates
	return Limits{
		MaxMessageBytes:           d.MaxMessageBytes,
		MaxEventBytes:             d.MaxEventBytes,
		MaxEventTags:              d.MaxEventTags,
		MaxLimit:                  d.MaxLimit,
		MaxSubscriptions:          d.MaxSubscriptions,
		MaxFilters:                d.MaxFilters,
		MaxConnectionsPerIP:       d.MaxConnectionsPerIP,
		ConnectionBufferBytes:     d.ConnectionBufferBytes,
		MaxConcurrentQueries:      d.MaxConcurrentQueries,
		MaxConcurrentQueriesPerIP: d.MaxConcurrentQueriesPerIP,
		QueryMemoryBytes:          d.QueryMemoryBytes,
		QueryMemoryBytesPerIP:     d.QueryMemoryBytesPerIP,
		SyncSessions:              d.MaxSyncSessions,
		SyncItems:                 d.MaxSyncItems,
		SyncMemoryBytes:           d.SyncMemoryBytes,
		HeaderTimeoutSeconds:      int(d.HeaderTimeout / time.Second),
		BodyTimeoutSeconds:        int(d.BodyTimeout / time.Second),
		IPv6Prefix:                d.IPv6Prefix,
		Rates:                     true,
		IPEventsPerSecond:         int(r.EventsPerIP.PerSecond),
		IPEventsBurst:             r.EventsPerIP.Burst,
		PubkeyEventsPerSecond:     int(r.EventsPerPubkey.PerSecond),
		PubkeyEventsBurst:         r.EventsPerPubkey.Burst,
		ConnectionReqsPerSecond:   int(r.ReqsPerConnection.PerSecond),
		ConnectionReqsBurst:       r.ReqsPerConnection.Burst,
		IPQueriesPerSecond:        int(r.QueriesPerIP.PerSecond),
		IPQueriesBurst:            r.QueriesPerIP.Burst,
		PubkeyChannelsPerHour:     int(r.ChannelsPerPubkey.PerSecond*3600 + 0.5),
		PubkeyChannelsBurst:       r.ChannelsPerPubkey.Burst,
	}
}

// EnvPrefix starts the name of every configuration environment variable.
const EnvPrefix = "BUZZ_LITE_"

// Load returns the defaults overlaid with the file at path (none when path is
// empty) and then with the environment, as looked up by getenv.
func Load(path string, getenv func(string) (string, bool)) (Config, error) {
	cfg := Default()
	if path != "" {
		md, err := toml.DecodeFile(path, &cfg)
		if err != nil {
			return cfg, fmt.Errorf("config file %s: %w", path, err)
		}
		if un := md.Undecoded(); len(un) > 0 {
			var keys, gone []string
			for _, k := range un {
				if r, ok := retired[k.String()]; ok {
					gone = append(gone, fmt.Sprintf("%s is retired: set %s instead, %s", k, r.by, r.why))
					continue
				}
				keys = append(keys, k.String())
			}
			if len(keys) > 0 {
				gone = append(gone, "unknown keys: "+strings.Join(keys, ", "))
			}
			return cfg, fmt.Errorf("config file %s: %s", path, strings.Join(gone, "; "))
		}
	}
	if err := retiredEnv(func(name string) bool { _, ok := getenv(name); return ok }); err != nil {
		return cfg, err
	}
	if err := applyEnv(&cfg, getenv); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// retired are keys buzz-lite took once, with what replaces each: a file
// or environment that sets one is refused, naming the replacement, where
// ignoring it would run the relay on a default the operator did not
// choose.
var retired = map[string]struct{ by, why string }{
	"storage.page_cache": {"storage.page_cache_bytes",
		"a bound in bytes instead of pages (a page is some 100 KB; the default 16777216 is 16 MiB, 0 turns the cache off)"},
}

// envName is the environment variable of key (section.key), as eachKey
// names them.
func envName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// retiredEnv refuses the environment variables of retired keys that are
// set, naming the replacement of each.
func retiredEnv(set func(name string) bool) error {
	var errs []error
	for key, r := range retired {
		if name := envName(key); set(name) {
			errs = append(errs, fmt.Errorf("environment: %s is retired: set %s (%s) instead, %s", name, envName(r.by), r.by, r.why))
		}
	}
	return errors.Join(errs...)
}

// ConfigEnv is the variable that names the configuration file, as
// --config does.
const ConfigEnv = EnvPrefix + "CONFIG"

// toolEnv are the BUZZ_LITE_ variables of the project's tests, benchmarks
// and scripts, which may be set where the relay runs (a test starts it
// with its own environment); a name ending in "_" is a prefix.
var toolEnv = []string{
	EnvPrefix + "TEST_", EnvPrefix + "BENCH_", EnvPrefix + "MILLION", EnvPrefix + "MILLION_TOPLEVEL",
	EnvPrefix + "BROWSER", EnvPrefix + "BROWSER_OUT", EnvPrefix + "CHROMIUM", EnvPrefix + "JS_CLIENTS",
	EnvPrefix + "CRASH_KILLS", EnvPrefix + "GO_INSTALL", EnvPrefix + "RELEASE_TARGETS",
}

// CheckEnv refuses, by name, every BUZZ_LITE_ variable of environ (as
// os.Environ gives it) that is neither a configuration key, nor
// ConfigEnv, nor one of the project's tools': a misspelt variable would
// otherwise leave its key at the default without a word, which a
// misspelt key of the file never does.
func CheckEnv(environ []string) error {
	known := map[string]bool{ConfigEnv: true}
	_ = eachKey(reflect.ValueOf(&Config{}).Elem(), func(env string, _ reflect.Value) error {
		known[env] = true
		return nil
	})
	set := map[string]bool{}
	var unknown []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
		if !strings.HasPrefix(name, EnvPrefix) || known[name] || isToolEnv(name) {
			continue
		}
		if retiredKey(name) == "" { // a retired one is refused below, naming its replacement
			unknown = append(unknown, name)
		}
	}
	gone := retiredEnv(func(name string) bool { return set[name] })
	if len(unknown) == 0 {
		return gone
	}
	slices.Sort(unknown)
	what := "variable"
	if len(unknown) > 1 {
		what = "variables"
	}
	return errors.Join(gone, fmt.Errorf("environment: unknown %s %s: a setting is %s<SECTION>_<KEY> of a key in config.example.toml (%s names the file)",
		what, strings.Join(unknown, ", "), EnvPrefix, ConfigEnv))
}

// retiredKey is the retired key whose environment variable is name, ""
// if none.
func retiredKey(name string) string {
	for key := range retired {
		if envName(key) == name {
			return key
		}
	}
	return ""
}

func isToolEnv(name string) bool {
	for _, t := range toolEnv {
		if name == t || strings.HasSuffix(t, "_") && strings.HasPrefix(name, t) {
			return true
		}
	}
	return false
}

// eachKey calls fn with the environment variable name and the field of
// every configuration key.
func eachKey(root reflect.Value, fn func(env string, field reflect.Value) error) error {
	rt := root.Type()
	for i := 0; i < rt.NumField(); i++ {
		section := root.Field(i)
		sectionName := rt.Field(i).Tag.Get("toml")
		st := section.Type()
		for j := 0; j < st.NumField(); j++ {
			key := st.Field(j).Tag.Get("toml")
			env := EnvPrefix + strings.ToUpper(sectionName+"_"+key)
			if err := fn(env, section.Field(j)); err != nil {
				return err
			}
		}
	}
	return nil
}

func applyEnv(cfg *Config, getenv func(string) (string, bool)) error {
	return eachKey(reflect.ValueOf(cfg).Elem(), func(env string, field reflect.Value) error {
		v, ok := getenv(env)
		if !ok {
			return nil
		}
		switch field.Kind() {
		case reflect.String:
			field.SetString(v)
		case reflect.Int, reflect.Int64:
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return fmt.Errorf("%s: not an integer: %q", env, v)
			}
			field.SetInt(n)
		case reflect.Bool:
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%s: not a boolean: %q", env, v)
			}
			field.SetBool(b)
		case reflect.Slice:
			var list []string
			for _, item := range strings.Split(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					list = append(list, item)
				}
			}
			if field.Type().Elem().Kind() != reflect.Int {
				field.Set(reflect.ValueOf(list))
				break
			}
			ints := make([]int, len(list))
			for i, item := range list {
				n, err := strconv.Atoi(item)
				if err != nil {
					return fmt.Errorf("%s: not a list of integers: %q", env, v)
				}
				ints[i] = n
			}
			field.Set(reflect.ValueOf(ints))
		default:
			return fmt.Errorf("%s: unsupported type %s", env, field.Type())
		}
		return nil
	})
}

// Normalize checks the configuration and brings pubkeys to hex (npub is
// accepted wherever a pubkey is).
func (c *Config) Normalize() error {
	var errs []error
	for i, a := range c.Relay.Admins {
		pk, err := PubKey(a)
		if err != nil {
			errs = append(errs, fmt.Errorf("relay.admins: %w", err))
		}
		c.Relay.Admins[i] = pk
	}
	if c.Relay.PubKey != "" {
		pk, err := PubKey(c.Relay.PubKey)
		if err != nil {
			errs = append(errs, fmt.Errorf("relay.pubkey: %w", err))
		}
		c.Relay.PubKey = pk
	}
	if c.Relay.URL != "" {
		u, err := url.Parse(c.Relay.URL)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			errs = append(errs, fmt.Errorf("relay.url: want a ws:// or wss:// URL, got %q", c.Relay.URL))
		}
	}
	if c.Server.Listen == "" {
		errs = append(errs, errors.New("server.listen: empty"))
	}
	if c.Storage.DataDir == "" {
		errs = append(errs, errors.New("storage.data_dir: empty"))
	}
	if c.Storage.PageCacheBytes < 0 {
		errs = append(errs, fmt.Errorf("storage.page_cache_bytes: must be 0 (off) or more, got %d", c.Storage.PageCacheBytes))
	}
	for name, v := range map[string]int64{
		"limits.max_message_bytes":             c.Limits.MaxMessageBytes,
		"limits.max_event_bytes":               int64(c.Limits.MaxEventBytes),
		"limits.max_event_tags":                int64(c.Limits.MaxEventTags),
		"limits.max_limit":                     int64(c.Limits.MaxLimit),
		"limits.max_subscriptions":             int64(c.Limits.MaxSubscriptions),
		"limits.max_filters":                   int64(c.Limits.MaxFilters),
		"limits.max_connections_per_ip":        int64(c.Limits.MaxConnectionsPerIP),
		"limits.connection_buffer_bytes":       c.Limits.ConnectionBufferBytes,
		"limits.max_concurrent_queries":        int64(c.Limits.MaxConcurrentQueries),
		"limits.max_concurrent_queries_per_ip": int64(c.Limits.MaxConcurrentQueriesPerIP),
		"limits.query_memory_bytes":            c.Limits.QueryMemoryBytes,
		"limits.query_memory_bytes_per_ip":     c.Limits.QueryMemoryBytesPerIP,
		"limits.sync_sessions":                 int64(c.Limits.SyncSessions),
		"limits.sync_items":                    int64(c.Limits.SyncItems),
		"limits.sync_memory_bytes":             c.Limits.SyncMemoryBytes,
		"limits.header_timeout_seconds":        int64(c.Limits.HeaderTimeoutSeconds),
		"limits.body_timeout_seconds":          int64(c.Limits.BodyTimeoutSeconds),
	} {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive, got %d", name, v))
		}
	}
	if p := c.Limits.IPv6Prefix; p < relay.MinIPv6Prefix || p > relay.MaxIPv6Prefix {
		errs = append(errs, fmt.Errorf("limits.ipv6_prefix: want %d to %d bits (an IPv6 client counts as its /%d), got %d",
			relay.MinIPv6Prefix, relay.MaxIPv6Prefix, relay.DefaultLimits.IPv6Prefix, p))
	}
	if c.Limits.Rates {
		for name, v := range map[string]int{
			"limits.ip_events_per_second":       c.Limits.IPEventsPerSecond,
			"limits.ip_events_burst":            c.Limits.IPEventsBurst,
			"limits.pubkey_events_per_second":   c.Limits.PubkeyEventsPerSecond,
			"limits.pubkey_events_burst":        c.Limits.PubkeyEventsBurst,
			"limits.connection_reqs_per_second": c.Limits.ConnectionReqsPerSecond,
			"limits.connection_reqs_burst":      c.Limits.ConnectionReqsBurst,
			"limits.ip_queries_per_second":      c.Limits.IPQueriesPerSecond,
			"limits.ip_queries_burst":           c.Limits.IPQueriesBurst,
			"limits.pubkey_channels_per_hour":   c.Limits.PubkeyChannelsPerHour,
			"limits.pubkey_channels_burst":      c.Limits.PubkeyChannelsBurst,
		} {
			if v <= 0 {
				errs = append(errs, fmt.Errorf("%s: must be positive, got %d (rates = false turns rate limits off)", name, v))
			}
		}
	}
	if _, err := prefixes(c.Limits.Exempt); err != nil {
		errs = append(errs, fmt.Errorf("limits.exempt: %w", err))
	}
	if _, err := prefixes(c.Server.TrustedProxies); err != nil {
		errs = append(errs, fmt.Errorf("server.trusted_proxies: %w", err))
	}
	if _, err := prefixes(c.Server.MetricsAllow); err != nil {
		errs = append(errs, fmt.Errorf("server.metrics_allow: %w", err))
	}
	for i, o := range c.Server.WebConnectAllow {
		origin, err := web.ConnectOrigin(o)
		if err != nil {
			errs = append(errs, fmt.Errorf("server.web_connect_allow: %w", err))
		}
		c.Server.WebConnectAllow[i] = origin
	}
	for _, list := range []struct {
		name string
		keys []string
	}{{"access.allowed_pubkeys", c.Access.AllowedPubkeys}, {"access.blocked_pubkeys", c.Access.BlockedPubkeys}} {
		for i, k := range list.keys {
			pk, err := PubKey(k)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", list.name, err))
			}
			list.keys[i] = pk
		}
	}
	if _, err := buzz.ParseCreatePolicy(c.Access.CreateChannels); err != nil {
		errs = append(errs, fmt.Errorf("access.create_channels: %w", err))
	}
	if _, err := c.Log.SlogLevel(); err != nil {
		errs = append(errs, err)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		errs = append(errs, fmt.Errorf("log.format: want text or json, got %q", c.Log.Format))
	}
	return errors.Join(errs...)
}

// SlogLevel is the log level as slog knows it.
func (l Log) SlogLevel() (slog.Level, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(l.Level)); err != nil {
		return lv, fmt.Errorf("log.level: want debug, info, warn or error, got %q", l.Level)
	}
	return lv, nil
}

// PubKey accepts a pubkey as 64 hex characters or as an npub and returns
// it in lowercase hex.
func PubKey(s string) (string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "npub1") {
		prefix, v, err := nip19.Decode(s)
		if err != nil || prefix != "npub" {
			return "", fmt.Errorf("invalid npub %q", s)
		}
		return v.(string), nil
	}
	s = strings.ToLower(s)
	if !nostr.IsValid32ByteHex(s) {
		return "", fmt.Errorf("invalid pubkey %q: want 64 hex characters or an npub", s)
	}
	return s, nil
}
