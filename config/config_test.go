package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/relay"
)

// env is a fake environment for Load.
type env map[string]string

func (e env) get(k string) (string, bool) { v, ok := e[k]; return v, ok }

// RL-24: with no file and no environment, Load is the embedded default,
// which is a valid configuration: 127.0.0.1:7777, ./buzz-lite-data, the
// limits of RL-27.
func TestDefaults(t *testing.T) {
	cfg, err := Load("", env{}.get)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, Default()) {
		t.Fatalf("Load with nothing = %+v, want Default() %+v", cfg, Default())
	}
	if cfg.Server.Listen != "127.0.0.1:7777" || cfg.Storage.DataDir != "./buzz-lite-data" {
		t.Errorf("listen %q, data dir %q", cfg.Server.Listen, cfg.Storage.DataDir)
	}
	// RL-27 defaults.
	l := cfg.Limits
	if l.MaxMessageBytes != 512<<10 || l.MaxEventBytes != 128<<10 || l.MaxEventTags != 2000 || l.MaxLimit != 1000 ||
		l.MaxSubscriptions != 50 || l.MaxConcurrentQueriesPerIP != 2 || l.MaxFilters != 10 || l.MaxConnectionsPerIP != 32 || !l.Rates ||
		l.IPEventsPerSecond != 10 || l.IPEventsBurst != 50 || l.PubkeyEventsPerSecond != 5 || l.PubkeyEventsBurst != 30 ||
		l.ConnectionReqsPerSecond != 20 || l.ConnectionReqsBurst != 100 || l.IPQueriesPerSecond != 20 ||
		l.IPQueriesBurst != 100 || l.PubkeyChannelsPerHour != 10 || l.PubkeyChannelsBurst != 5 ||
		l.HeaderTimeoutSeconds != 10 || l.BodyTimeoutSeconds != 30 || len(l.Exempt) != 0 {
		t.Errorf("limits %+v", cfg.Limits)
	}
	if r := l.Relay(); r.Rates == nil || *r.Rates != relay.DefaultRates {
		t.Errorf("rates as the relay takes them: %+v, want %+v", r.Rates, relay.DefaultRates)
	}
	if err := cfg.Normalize(); err != nil {
		t.Fatalf("the default does not normalize: %v", err)
	}
	// RL-30, issue 29 item 4: /metrics answers loopback only.
	if got, want := cfg.Server.MetricsAllowNets(), relay.DefaultMetricsAllow; !reflect.DeepEqual(got, want) {
		t.Errorf("metrics_allow %v, want loopback %v", got, want)
	}
}

// RL-30, issue 29 item 4: server.metrics_allow from the file or the
// environment replaces the loopback default (a scraper on another
// machine is named, loopback too if it should stay), a bare address is a
// network of one, and an IPv4-mapped address is its IPv4 form.
func TestMetricsAllow(t *testing.T) {
	path := testutil.WriteFile(t, "buzz-lite.toml", "[server]\nmetrics_allow = [\"10.1.2.3\", \"192.168.0.0/16\"]\n")
	for _, tc := range []struct {
		name string
		path string
		env  env
		want []string
	}{
		{"file", path, env{}, []string{"10.1.2.3/32", "192.168.0.0/16"}},
		{"environment", "", env{"BUZZ_LITE_SERVER_METRICS_ALLOW": "127.0.0.1, ::ffff:10.0.0.1, fd00::/8"}, []string{"127.0.0.1/32", "10.0.0.1/32", "fd00::/8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(tc.path, tc.env.get)
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.Normalize(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range cfg.Server.MetricsAllowNets() {
				got = append(got, p.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("metrics_allow %v, want %v", got, tc.want)
			}
		})
	}
}

// CW-26: server.web_connect_allow is empty by default (the web client's
// pages connect to their own origin only); from the file or the
// environment it takes ws:// and wss:// origins, brought to lowercase
// without a trailing slash, the form the Content-Security-Policy names.
func TestWebConnectAllow(t *testing.T) {
	if d := Default(); len(d.Server.WebConnectAllow) != 0 {
		t.Errorf("default web_connect_allow %v, want none", d.Server.WebConnectAllow)
	}
	path := testutil.WriteFile(t, "buzz-lite.toml", "[server]\nweb_connect_allow = [\"wss://Bunker.Example.com/\", \"ws://127.0.0.1:7778\"]\n")
	for _, tc := range []struct {
		name string
		path string
		env  env
		want []string
	}{
		{"file", path, env{}, []string{"wss://bunker.example.com", "ws://127.0.0.1:7778"}},
		{"environment", path, env{"BUZZ_LITE_SERVER_WEB_CONNECT_ALLOW": "wss://relay.nsec.app, wss://[::1]:8443"}, []string{"wss://relay.nsec.app", "wss://[::1]:8443"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(tc.path, tc.env.get)
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.Normalize(); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Server.WebConnectAllow, tc.want) {
				t.Errorf("web_connect_allow %v, want %v", cfg.Server.WebConnectAllow, tc.want)
			}
		})
	}
}

// RL-24: defaults < file < environment, key by key, for strings, lists
// and integers.
func TestPrecedence(t *testing.T) {
	fileAdmin, _ := testutil.NewPubKey(t)
	envAdmin1, envAdmin1npub := testutil.NewPubKey(t)
	envAdmin2, _ := testutil.NewPubKey(t)
	path := testutil.WriteFile(t, "buzz-lite.toml", `
[relay]
name = "from file"
description = "file description"
admins = ["`+fileAdmin+`"]

[server]
listen = "0.0.0.0:8080"

[limits]
max_limit = 500
max_event_tags = 100

[log]
level = "debug"
`)

	// File only.
	cfg, err := Load(path, env{}.get)
	if err != nil {
		t.Fatal(err)
	}
	def := Default()
	if cfg.Relay.Name != "from file" || cfg.Relay.Description != "file description" ||
		cfg.Server.Listen != "0.0.0.0:8080" || cfg.Limits.MaxLimit != 500 || cfg.Limits.MaxEventTags != 100 ||
		cfg.Log.Level != "debug" || !reflect.DeepEqual(cfg.Relay.Admins, []string{fileAdmin}) {
		t.Errorf("file values not applied: %+v", cfg)
	}
	if cfg.Storage.DataDir != def.Storage.DataDir || cfg.Limits.MaxMessageBytes != def.Limits.MaxMessageBytes ||
		cfg.Limits.MaxEventBytes != def.Limits.MaxEventBytes {
		t.Errorf("keys absent from the file lost their defaults: %+v", cfg)
	}

	// Environment over file, key by key.
	e := env{
		"BUZZ_LITE_RELAY_NAME":               "from env",
		"BUZZ_LITE_RELAY_ADMINS":             " " + envAdmin1npub + " , " + envAdmin2 + ",, ",
		"BUZZ_LITE_LIMITS_MAX_LIMIT":         " 250 ",
		"BUZZ_LITE_LIMITS_MAX_MESSAGE_BYTES": "1048576",
		"BUZZ_LITE_STORAGE_DATA_DIR":         "/var/lib/buzz",
		"BUZZ_LITE_RELAY_URL":                "wss://relay.example.com",
		"UNRELATED":                          "x",
	}
	cfg, err = Load(path, e.get)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Relay: Relay{
			Name:        "from env",
			Description: "file description",
			URL:         "wss://relay.example.com",
			Admins:      []string{envAdmin1npub, envAdmin2},
		},
		Server:  Server{Listen: "0.0.0.0:8080", Metrics: true, MetricsAllow: def.Server.MetricsAllow, Web: true},
		Storage: Storage{DataDir: "/var/lib/buzz", PageCacheBytes: def.Storage.PageCacheBytes, MapReads: def.Storage.MapReads},
		Access:  def.Access,
		Limits: func() Limits {
			l := def.Limits
			l.MaxMessageBytes, l.MaxEventTags, l.MaxLimit = 1<<20, 100, 250
			return l
		}(),
		Log: Log{Level: "debug", Format: "text"},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("env over file:\n got %+v\nwant %+v", cfg, want)
	}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Relay.Admins, []string{envAdmin1, envAdmin2}) {
		t.Errorf("admins after Normalize: %v, want hex %v", cfg.Relay.Admins, []string{envAdmin1, envAdmin2})
	}

	// Environment over defaults, no file.
	cfg, err = Load("", env{"BUZZ_LITE_SERVER_LISTEN": "[::1]:9000", "BUZZ_LITE_LIMITS_MAX_EVENT_BYTES": "4096"}.get)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Listen != "[::1]:9000" || cfg.Limits.MaxEventBytes != 4096 || cfg.Relay.Name != def.Relay.Name {
		t.Errorf("env over defaults: %+v", cfg)
	}

	// An empty environment value is a value: it empties the key.
	cfg, err = Load(path, env{"BUZZ_LITE_RELAY_ADMINS": ""}.get)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Relay.Admins) != 0 {
		t.Errorf("BUZZ_LITE_RELAY_ADMINS=\"\": admins %v, want none", cfg.Relay.Admins)
	}
}

// RL-24: every key has an environment variable BUZZ_LITE_<SECTION>_<KEY>
// that Load applies.
func TestEveryKeyHasEnv(t *testing.T) {
	e := env{}
	keys := 0
	var cfg Config
	err := eachKey(reflect.ValueOf(&cfg).Elem(), func(name string, field reflect.Value) error {
		keys++
		if !regexp.MustCompile(`^BUZZ_LITE_[A-Z]+_[A-Z0-9_]+$`).MatchString(name) {
			t.Errorf("env var %q is not BUZZ_LITE_<SECTION>_<KEY>", name)
		}
		switch field.Kind() {
		case reflect.String:
			e[name] = "v-" + name
		case reflect.Int, reflect.Int64:
			e[name] = "4242"
		case reflect.Slice:
			e[name] = "a,b"
			if field.Type().Elem().Kind() == reflect.Int {
				e[name] = "4, 2"
			}
		case reflect.Bool:
			e[name] = "true"
		default:
			t.Errorf("%s: type %s", name, field.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if keys == 0 {
		t.Fatal("eachKey visited no key")
	}
	got, err := Load("", e.get)
	if err != nil {
		t.Fatal(err)
	}
	eachKey(reflect.ValueOf(&got).Elem(), func(name string, field reflect.Value) error {
		var want any
		switch field.Kind() {
		case reflect.String:
			want = "v-" + name
		case reflect.Int:
			want = 4242
		case reflect.Int64:
			want = int64(4242)
		case reflect.Slice:
			want = []string{"a", "b"}
			if field.Type().Elem().Kind() == reflect.Int {
				want = []int{4, 2}
			}
		case reflect.Bool:
			want = true
		}
		if !reflect.DeepEqual(field.Interface(), want) {
			t.Errorf("%s: field is %v, want %v", name, field.Interface(), want)
		}
		return nil
	})
}

// RL-24: the environment names the offending variable when its value is no
// integer or boolean.
func TestEnvBadValues(t *testing.T) {
	for name, v := range map[string]string{
		"BUZZ_LITE_LIMITS_MAX_LIMIT":         "many",
		"BUZZ_LITE_LIMITS_MAX_MESSAGE_BYTES": "1.5",
		"BUZZ_LITE_LIMITS_MAX_EVENT_TAGS":    "",
		"BUZZ_LITE_ACCESS_ALLOWED_KINDS":     "1,x",
	} {
		_, err := Load("", env{name: v}.get)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: error %v, want one naming the variable", name, v, err)
		}
	}
}

// RL-24: an unknown key in the file is an error that names it; so is a file that
// is no TOML, or a value of the wrong type.
func TestFileErrors(t *testing.T) {
	path := testutil.WriteFile(t, "buzz-lite.toml", `
[relay]
nmae = "typo"

[bogus]
key = 1
`)
	_, err := Load(path, env{}.get)
	if err == nil {
		t.Fatal("unknown keys accepted")
	}
	for _, key := range []string{"relay.nmae", "bogus"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}

	path = testutil.WriteFile(t, "buzz-lite.toml", "max_limit = 10\n") // a key outside any section
	if _, err := Load(path, env{}.get); err == nil || !strings.Contains(err.Error(), "max_limit") {
		t.Errorf("top-level key: %v", err)
	}

	for _, content := range []string{"[relay\nname = 1", "[limits]\nmax_limit = \"ten\"", "[relay]\nadmins = \"abc\""} {
		if _, err := Load(testutil.WriteFile(t, "buzz-lite.toml", content), env{}.get); err == nil {
			t.Errorf("file %q accepted", content)
		}
	}

	if _, err := Load(filepath.Join(t.TempDir(), "missing.toml"), env{}.get); err == nil {
		t.Error("a missing file is no error")
	}
}

// Issue 32 item 5: storage.page_cache_bytes bounds the page cache in
// bytes, 16 MiB by default, set by the file and then by
// BUZZ_LITE_STORAGE_PAGE_CACHE_BYTES; storage.page_cache, the bound in
// pages it replaces, is refused naming it, beside any unknown key.
func TestPageCacheBytes(t *testing.T) {
	if got := Default().Storage.PageCacheBytes; got != 16<<20 {
		t.Errorf("default page_cache_bytes %d, want 16 MiB", got)
	}
	path := testutil.WriteFile(t, "buzz-lite.toml", "[storage]\npage_cache_bytes = 33554432\n")
	for _, tc := range []struct {
		env  env
		want int64
	}{{env{}, 32 << 20}, {env{"BUZZ_LITE_STORAGE_PAGE_CACHE_BYTES": " 0 "}, 0}, {env{"BUZZ_LITE_STORAGE_PAGE_CACHE_BYTES": "1048576"}, 1 << 20}} {
		cfg, err := Load(path, tc.env.get)
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Normalize(); err != nil {
			t.Fatal(err)
		}
		if got := cfg.Storage.PageCacheBytes; got != tc.want {
			t.Errorf("env %v: page_cache_bytes %d, want %d", tc.env, got, tc.want)
		}
	}
	if _, err := Load("", env{"BUZZ_LITE_STORAGE_PAGE_CACHE_BYTES": "16MiB"}.get); err == nil ||
		!strings.Contains(err.Error(), "BUZZ_LITE_STORAGE_PAGE_CACHE_BYTES: not an integer") {
		t.Errorf("a size with a unit: %v, want the variable named", err)
	}

	for _, content := range []string{"[storage]\npage_cache = 128\n", "[storage]\npage_cache = 0\npage_cahce_bytes = 1\n"} {
		_, err := Load(testutil.WriteFile(t, "buzz-lite.toml", content), env{}.get)
		if err == nil || !strings.Contains(err.Error(), "storage.page_cache is retired: set storage.page_cache_bytes instead") {
			t.Errorf("file %q: %v, want the old key refused naming its replacement", content, err)
		}
		if strings.Contains(content, "cahce") && (err == nil || !strings.Contains(err.Error(), "unknown keys: storage.page_cahce_bytes")) {
			t.Errorf("file %q: %v, want the misspelt key named too", content, err)
		}
	}
}

// RL-24, RL-21: Normalize turns npub and uppercase pubkeys into lowercase hex and refuses
// what cannot work: bad pubkeys, a relay URL that is not ws(s)://,
// non-positive limits, an unknown log level, an empty listen address or data
// directory.
func TestNormalize(t *testing.T) {
	hex1, npub1 := testutil.NewPubKey(t)
	hex2, _ := testutil.NewPubKey(t)
	op, opNpub := testutil.NewPubKey(t)

	cfg := Default()
	cfg.Relay.Admins = []string{npub1, strings.ToUpper(hex2), " " + hex1 + " "}
	cfg.Relay.PubKey = opNpub
	cfg.Relay.URL = "wss://relay.example.com/path"
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Relay.Admins, []string{hex1, hex2, hex1}) {
		t.Errorf("admins %v", cfg.Relay.Admins)
	}
	if cfg.Relay.PubKey != op {
		t.Errorf("pubkey %q, want %q", cfg.Relay.PubKey, op)
	}
	for _, u := range []string{"ws://127.0.0.1:7777", "wss://relay.example.com"} {
		c := Default()
		c.Relay.URL = u
		if err := c.Normalize(); err != nil {
			t.Errorf("relay.url %q: %v", u, err)
		}
	}
	for _, lv := range []string{"debug", "info", "warn", "error", "DEBUG"} {
		c := Default()
		c.Log.Level = lv
		if err := c.Normalize(); err != nil {
			t.Errorf("log.level %q: %v", lv, err)
		}
	}

	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // in the error
	}{
		{"bad admin", func(c *Config) { c.Relay.Admins = []string{hex1, "nothex"} }, "relay.admins"},
		{"short admin", func(c *Config) { c.Relay.Admins = []string{hex1[:63]} }, "relay.admins"},
		{"bad npub", func(c *Config) { c.Relay.Admins = []string{corruptLast(npub1)} }, "relay.admins"},
		{"nsec as admin", func(c *Config) {
			nsec, _ := nip19.EncodePrivateKey(nostr.GeneratePrivateKey())
			c.Relay.Admins = []string{nsec}
		}, "relay.admins"},
		{"bad operator pubkey", func(c *Config) { c.Relay.PubKey = "npub1xyz" }, "relay.pubkey"},
		{"http url", func(c *Config) { c.Relay.URL = "http://relay.example.com" }, "relay.url"},
		{"https url", func(c *Config) { c.Relay.URL = "https://relay.example.com" }, "relay.url"},
		{"url without host", func(c *Config) { c.Relay.URL = "wss://" }, "relay.url"},
		{"url garbage", func(c *Config) { c.Relay.URL = "::not a url" }, "relay.url"},
		{"zero max_limit", func(c *Config) { c.Limits.MaxLimit = 0 }, "limits.max_limit"},
		{"negative max_event_tags", func(c *Config) { c.Limits.MaxEventTags = -1 }, "limits.max_event_tags"},
		{"zero max_event_bytes", func(c *Config) { c.Limits.MaxEventBytes = 0 }, "limits.max_event_bytes"},
		{"negative max_message_bytes", func(c *Config) { c.Limits.MaxMessageBytes = -5 }, "limits.max_message_bytes"},
		{"zero max_filters", func(c *Config) { c.Limits.MaxFilters = 0 }, "limits.max_filters"},
		{"zero rate with rates on", func(c *Config) { c.Limits.IPEventsBurst = 0 }, "limits.ip_events_burst"},
		{"ipv6_prefix under 48", func(c *Config) { c.Limits.IPv6Prefix = 47 }, "limits.ipv6_prefix: want 48 to 128 bits"}, // Issue 29 item 2
		{"ipv6_prefix over 128", func(c *Config) { c.Limits.IPv6Prefix = 129 }, "limits.ipv6_prefix: want 48 to 128 bits"},
		{"ipv6_prefix zero", func(c *Config) { c.Limits.IPv6Prefix = 0 }, "limits.ipv6_prefix: want 48 to 128 bits"},
		{"bad exempt network", func(c *Config) { c.Limits.Exempt = []string{"10.0.0.0/33"} }, "limits.exempt"},
		{"bad trusted proxy", func(c *Config) { c.Server.TrustedProxies = []string{"proxy.local"} }, "server.trusted_proxies"},
		{"bad metrics network", func(c *Config) { c.Server.MetricsAllow = []string{"10.0.0.0/33"} }, "server.metrics_allow"},
		{"https origin to connect to", func(c *Config) { c.Server.WebConnectAllow = []string{"https://bunker.example.com"} }, "server.web_connect_allow"}, // CW-26
		{"origin with a path", func(c *Config) { c.Server.WebConnectAllow = []string{"wss://bunker.example.com/x"} }, "server.web_connect_allow"},
		{"wildcard origin", func(c *Config) { c.Server.WebConnectAllow = []string{"wss://*.example.com"} }, "server.web_connect_allow"},
		{"origin ending the directive", func(c *Config) { c.Server.WebConnectAllow = []string{"wss://a.example.com;script-src"} }, "server.web_connect_allow"},
		{"bad blocked pubkey", func(c *Config) { c.Access.BlockedPubkeys = []string{"npub1nope"} }, "access.blocked_pubkeys"},
		{"bad log level", func(c *Config) { c.Log.Level = "verbose" }, "log.level"},
		{"bad log format", func(c *Config) { c.Log.Format = "logfmt" }, "log.format"}, // RL-30
		{"empty listen", func(c *Config) { c.Server.Listen = "" }, "server.listen"},
		{"empty data dir", func(c *Config) { c.Storage.DataDir = "" }, "storage.data_dir"},
		{"negative page cache", func(c *Config) { c.Storage.PageCacheBytes = -1 }, "storage.page_cache_bytes"},
	} {
		c := Default()
		tc.edit(&c)
		err := c.Normalize()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.want)
		}
	}

	// Several problems are all reported.
	c := Default()
	c.Limits.MaxLimit = 0
	c.Log.Level = "loud"
	err := c.Normalize()
	if err == nil || !strings.Contains(err.Error(), "limits.max_limit") || !strings.Contains(err.Error(), "log.level") {
		t.Errorf("two problems: %v", err)
	}
}

// Issue 29 item 2: limits.ipv6_prefix is 64 by default, and the file and
// then BUZZ_LITE_LIMITS_IPV6_PREFIX set it, as every key.
func TestIPv6PrefixLayering(t *testing.T) {
	if got := Default().Limits.Relay().IPv6Prefix; got != 64 {
		t.Errorf("default ipv6_prefix %d, want 64", got)
	}
	path := filepath.Join(t.TempDir(), "buzz-lite.toml")
	if err := os.WriteFile(path, []byte("[limits]\nipv6_prefix = 56\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  env
		want int
	}{{env{}, 56}, {env{"BUZZ_LITE_LIMITS_IPV6_PREFIX": "128"}, 128}} {
		cfg, err := Load(path, tc.env.get)
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Normalize(); err != nil {
			t.Fatal(err)
		}
		if got := cfg.Limits.Relay().IPv6Prefix; got != tc.want {
			t.Errorf("env %v: ipv6_prefix %d, want %d", tc.env, got, tc.want)
		}
	}
}

// RL-21: PubKey accepts hex of either case and npub, nothing else.
func TestPubKey(t *testing.T) {
	hex, npub := testutil.NewPubKey(t)
	for _, in := range []string{hex, strings.ToUpper(hex), npub, " " + npub + "\n"} {
		if got, err := PubKey(in); err != nil || got != hex {
			t.Errorf("PubKey(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "npub1", "zz" + hex[2:], hex + "0", "nprofile1xyz"} {
		if got, err := PubKey(in); err == nil {
			t.Errorf("PubKey(%q) = %q, want an error", in, got)
		}
	}
}

// RL-24: config.example.toml documents every key with its environment
// variable, loads without unknown keys, and shows the embedded defaults.
func TestExampleFile(t *testing.T) {
	path := filepath.Join("..", "config.example.toml")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("config.example.toml does not exist yet")
	}
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, env{}.get)
	if err != nil {
		t.Fatalf("Load(config.example.toml): %v", err)
	}
	// The example says its values are the defaults.
	def := Default()
	// An empty list in the file is the default's nil list.
	for _, c := range []*Config{&cfg, &def} {
		eachKey(reflect.ValueOf(c).Elem(), func(_ string, field reflect.Value) error {
			if field.Kind() == reflect.Slice && field.Len() == 0 {
				field.Set(reflect.Zero(field.Type()))
			}
			return nil
		})
	}
	if !reflect.DeepEqual(cfg, def) {
		t.Errorf("the example's values are not the defaults:\n got %+v\nwant %+v", cfg, def)
	}
	if err := cfg.Normalize(); err != nil {
		t.Errorf("the example does not normalize: %v", err)
	}

	// Which keys the file sets, per section.
	var doc map[string]map[string]any
	if _, err := toml.Decode(string(b), &doc); err != nil {
		t.Fatalf("example is not TOML of sections: %v", err)
	}
	text := string(b)
	var zero Config
	rt := reflect.TypeOf(zero)
	visited := 0
	for i := 0; i < rt.NumField(); i++ {
		section := rt.Field(i).Tag.Get("toml")
		st := rt.Field(i).Type
		if !strings.Contains(text, "["+section+"]") {
			t.Errorf("example has no [%s] section", section)
		}
		for j := 0; j < st.NumField(); j++ {
			key := st.Field(j).Tag.Get("toml")
			visited++
			_, set := doc[section][key]
			commented := regexp.MustCompile(`(?m)^\s*#\s*` + regexp.QuoteMeta(key) + `\s*=`).MatchString(text)
			if !set && !commented {
				t.Errorf("example does not mention %s.%s", section, key)
			}
		}
	}

	// Every environment variable, as eachKey names them, is in the file.
	envs := 0
	eachKey(reflect.ValueOf(&zero).Elem(), func(name string, _ reflect.Value) error {
		envs++
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(text) {
			t.Errorf("example does not name the environment variable %s", name)
		}
		return nil
	})
	if envs != visited {
		t.Errorf("eachKey visits %d keys, the Config struct has %d", envs, visited)
	}
}

// corruptLast changes the last character of a bech32 string to another
// one, which its checksum always catches.
func corruptLast(s string) string {
	c := byte('q')
	if s[len(s)-1] == c {
		c = 'p'
	}
	return s[:len(s)-1] + string(c)
}
