package relay

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// tokensRelayURL is the public URL of the relays of these tests, the same
// for every one of them, behind one name as a load balancer puts them,
// so that a token signed for one is good for the others and for the
// relay restarted on another port.
const tokensRelayURL = "ws://relay.example"

func withTokensURL(c *Config) { c.URL = tokensRelayURL }

// tokensQueryURL is the URL the tokens of these tests name.
const tokensQueryURL = "http://relay.example/query"

// Issue 29 item 3, RL-17: a token is used once across a restart on the
// same data: the relay restarted refuses the token it accepted before,
// and still takes a fresh one.
func TestNIP98ReplayAfterRestart(t *testing.T) {
	s := startServer(t, withTokensURL)
	p := qySetupPrivate(t, s)
	body := `[{"#h":["` + p.h + `"]}]`
	auth := qyAuth(t, p.member, tokensQueryURL, body)
	if evs := qyPost(t, s, body, auth).events(t); !qyHas(evs, p.msg.ID) {
		t.Fatalf("the member's token did not read the private channel: %s", qyShort(qyIDs(evs)))
	}
	s = s.restart(t, withTokensURL)
	qyPost(t, s, body, auth).wantError(t, http.StatusUnauthorized, "NIP-98: replay detected")
	if evs := qyPost(t, s, body, qyAuth(t, p.member, tokensQueryURL, body)).events(t); !qyHas(evs, p.msg.ID) {
		t.Fatalf("a fresh token after the restart did not read the private channel: %s", qyShort(qyIDs(evs)))
	}
}

// Issue 29 item 3, RL-17, RL-33: two relays sharing one PostgreSQL
// database accept a token once between them: used on one, it is refused
// on the other, and sent to both at the same moment, one of them takes it.
func TestNIP98OnceAcrossProcesses(t *testing.T) {
	a := startServer(t, withTokensURL)
	b := a.startTwin(t, withTokensURL)
	p := qySetupPrivate(t, a)
	body := `[{"#h":["` + p.h + `"]}]`

	auth := qyAuth(t, p.member, tokensQueryURL, body)
	if evs := qyPost(t, a, body, auth).events(t); !qyHas(evs, p.msg.ID) {
		t.Fatalf("the member's token did not read the private channel on A: %s", qyShort(qyIDs(evs)))
	}
	qyPost(t, b, body, auth).wantError(t, http.StatusUnauthorized, "NIP-98: replay detected")

	for round := range 8 {
		auth := qyAuth(t, p.member, tokensQueryURL, body)
		answers := make([]tokenAnswer, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, s := range []*testServer{a, b} {
			wg.Go(func() {
				<-start
				answers[i] = postToken(s, body, auth)
			})
		}
		close(start)
		wg.Wait()
		ok, replay := 0, 0
		for _, ans := range answers {
			switch {
			case ans.err != nil:
				t.Fatalf("round %d: %v", round, ans.err)
			case ans.status == http.StatusOK:
				ok++
			case ans.status == http.StatusUnauthorized && ans.message == "NIP-98: replay detected":
				replay++
			default:
				t.Fatalf("round %d: answered %d %q", round, ans.status, ans.message)
			}
		}
		if ok != 1 || replay != 1 {
			t.Fatalf("round %d: one token sent to both relays at once was accepted %d times, refused as a replay %d times", round, ok, replay)
		}
	}
}

// tokenAnswer is the status of a `/query` answer and, for an error, its
// message.
type tokenAnswer struct {
	status  int
	message string
	err     error
}

// postToken posts body to s's /query with auth, from any goroutine.
func postToken(s *testServer, body, auth string) tokenAnswer {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.httpURL+"/query", bytes.NewReader([]byte(body)))
	if err != nil {
		return tokenAnswer{err: err}
	}
	req.Header.Set("Authorization", auth)
	resp, err := qyClient.Do(req)
	if err != nil {
		return tokenAnswer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return tokenAnswer{err: err}
	}
	ans := tokenAnswer{status: resp.StatusCode}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			return tokenAnswer{err: fmt.Errorf("error body %q: %w", b, err)}
		}
		ans.message = e.Error
	}
	return ans
}

// Issue 29 item 3, RL-17, RL-27: a flood of valid tokens from one client
// adds no more rows to the store than its `/query` rate lets requests
// through: the requests past its burst are refused before their token is
// looked at.
func TestNIP98TokensBoundedPerClient(t *testing.T) {
	const burst = 5
	s := startServer(t, withTokensURL, func(c *Config) {
		r := DefaultRates
		r.QueriesPerIP = Rate{PerSecond: never, Burst: burst}
		c.Limits.Rates = &r
	})
	p := qySetupPrivate(t, s)
	body := `[{"#h":["` + p.h + `"]}]`
	for i := range burst + 10 {
		r := qyPost(t, s, body, qyAuth(t, p.member, tokensQueryURL, body))
		switch {
		case i < burst && r.status != http.StatusOK:
			t.Fatalf("request %d within the burst: %d %s", i, r.status, r.body)
		case i >= burst:
			r.wantError(t, http.StatusTooManyRequests, errQueryRate)
		}
	}
	if n := tokenRows(t, s); n != burst {
		t.Fatalf("the store holds %d tokens of the client, want %d", n, burst)
	}
}

// tokenRows counts the NIP-98 tokens s's store holds.
func tokenRows(t *testing.T, s *testServer) int {
	t.Helper()
	ctx := context.Background()
	const count = `SELECT count(*) FROM nip98_tokens`
	var n int
	if s.pgURL != "" {
		conn, err := pgx.Connect(ctx, s.pgURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, count).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	db, err := sql.Open("sqlite", "file:"+s.dbPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, count).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Issue 29 item 3, RL-16: when the store cannot remember a token (here the
// table of tokens is gone behind the relay's back), a valid token is
// answered 500 "internal server error", the detail in the log only: not a
// 401 that would blame the client's token, and not accepted unremembered.
func TestNIP98StoreFailure(t *testing.T) {
	var sink syncBuffer
	s := startServer(t, withTokensURL, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&sink, nil)) })
	p := qySetupPrivate(t, s)
	db, err := sql.Open("sqlite", "file:"+s.sqlitePath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DROP TABLE nip98_tokens`); err != nil {
		t.Fatal(err)
	}
	body := `[{"#h":["` + p.h + `"]}]`
	qyPost(t, s, body, qyAuth(t, p.member, tokensQueryURL, body)).wantError(t, http.StatusInternalServerError, errInternal)
	if log := sink.String(); !strings.Contains(log, "nip98_tokens") {
		t.Errorf("the log does not say what failed:\n%s", log)
	}
}
