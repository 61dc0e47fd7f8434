package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// The abuse run (issue 13): each attack of the list, one at a
// time, from one loopback address, while an innocent client on another
// publishes and REQs at a steady pace; what the innocent client waited
// and the relay's peak memory during the attack are judged against RL-27.

// AbuseTargets are the aims of RL-27 and RL-27a under attack.
var AbuseTargets = struct {
	// P95 bounds the innocent client's publish->OK and REQ->EOSE.
	P95 time.Duration
	// PeakRSS bounds the relay's peak anonymous resident set during an
	// attack.
	PeakRSS int64
	// WAL bounds the write-ahead log while readers run without pause.
	WAL int64
}{250 * time.Millisecond, 300 << 20, 128 << 20}

// AbuseOptions size an abuse run.
type AbuseOptions struct {
	// Duration is how long each attack lasts, the innocent client
	// measured throughout.
	Duration time.Duration
	// Pace is how many events the innocent client publishes a second,
	// and how many REQs it sends.
	Pace float64
	// LargeEvents is how many events near the event size limit the
	// attacker stores for the attacks that ask for them.
	LargeEvents int
	// Sockets is how many WebSockets the many-sockets attack opens; a
	// sixth as many trickle /query bodies in the slowloris attack.
	Sockets int
	// Attacker and Innocent are the loopback addresses the two dial
	// from (Linux routes all of 127.0.0.0/8 to loopback).
	Attacker, Innocent string
}

// Probe reads the relay process from outside: what the wire does not say.
type Probe struct {
	// PeakRSS is the relay's peak anonymous resident set (RssAnon,
	// sampled) since the last call, in bytes; 0 when unknown. The mapped
	// database pages, the kernel's page cache, are not the relay's memory.
	PeakRSS func() int64
	// WALBytes is the size of the relay's write-ahead log now.
	WALBytes func() (int64, error)
}

// Latency is what the innocent client saw of one kind of operation.
type Latency struct {
	// Ops counts the operations answered as asked (OK true, EOSE).
	Ops int `json:"ops"`
	// Failed counts the others by how they failed: refused (the answer's
	// label and reason prefix), dropped with the connection, unanswered.
	Failed map[string]int `json:"failed,omitempty"`
	// Percentiles of the answered operations and of the unanswered ones,
	// those counted as the time they were waited for.
	P50 time.Duration `json:"p50_ns"`
	P95 time.Duration `json:"p95_ns"`
	P99 time.Duration `json:"p99_ns"`
}

func (l Latency) failures() int {
	n := 0
	for _, c := range l.Failed {
		n += c
	}
	return n
}

// AttackResult is one attack: what the attacker did and what it got, and
// what the innocent client and the relay's memory went through meanwhile.
type AttackResult struct {
	Name string `json:"name"`
	// Does says what the attacker does.
	Does string `json:"does"`
	// Setup says what the attacker prepared before the clock started.
	Setup string `json:"setup,omitempty"`
	// Actions counts what the attacker sent during the attack (messages,
	// connections, requests: Unit says), Refused how many of them the
	// relay refused, by how, and Unanswered those without an answer
	// when the attack ended.
	Unit       string           `json:"unit"`
	Actions    int64            `json:"actions"`
	Refused    map[string]int64 `json:"refused,omitempty"`
	Unanswered int64            `json:"unanswered"`
	// Elapsed is how long the attacker took, its wind-down included.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Publish is the innocent client's publish->OK, REQ its REQ->EOSE.
	Publish Latency `json:"publish"`
	REQ     Latency `json:"req"`
	// Probe is what the innocent client saw of the requests the attack
	// takes from beyond publishes and REQs (syncs, POST /query), which
	// ProbeName names; nil for an attack without one.
	ProbeName string   `json:"probe_name,omitempty"`
	Probe     *Latency `json:"probe,omitempty"`
	// PeakRSS is the relay's peak anonymous resident set during the
	// attack.
	PeakRSS int64 `json:"peak_rss_anon"`
	// WALBytes is the largest write-ahead log seen, where the attack
	// measures it.
	WALBytes int64 `json:"wal_bytes,omitempty"`
	// RelayExit says how the relay process ended when it ended by itself.
	RelayExit string `json:"relay_exit,omitempty"`
	// RelayWarnings counts the warnings and errors the relay logged, and
	// FirstWarning is the first of them.
	RelayWarnings int      `json:"relay_warnings"`
	FirstWarning  string   `json:"first_warning,omitempty"`
	Notes         []string `json:"notes,omitempty"`
	// Met says whether every aim held; Missed says which did not.
	Met    bool     `json:"met"`
	Missed []string `json:"missed,omitempty"`
}

// Judge sets Met and Missed against AbuseTargets: the innocent client's
// p95s, its failures, the relay's peak anonymous RSS and, where measured,
// the WAL.
func (r *AttackResult) Judge() {
	r.Missed = nil
	judged := []struct {
		what string
		lat  Latency
	}{{"publish", r.Publish}, {"REQ", r.REQ}}
	if r.Probe != nil {
		judged = append(judged, struct {
			what string
			lat  Latency
		}{r.ProbeName, *r.Probe})
	}
	for _, l := range judged {
		if l.lat.P95 >= AbuseTargets.P95 {
			r.Missed = append(r.Missed, fmt.Sprintf("%s p95 %s", l.what, ms(l.lat.P95)))
		}
		if n := l.lat.failures(); n > 0 {
			r.Missed = append(r.Missed, fmt.Sprintf("%d innocent %s failed", n, l.what))
		}
		if l.lat.Ops == 0 {
			r.Missed = append(r.Missed, fmt.Sprintf("no innocent %s answered", l.what))
		}
	}
	if r.PeakRSS >= AbuseTargets.PeakRSS {
		r.Missed = append(r.Missed, fmt.Sprintf("peak anonymous RSS %.0f MiB", mib(r.PeakRSS)))
	}
	if r.WALBytes >= AbuseTargets.WAL {
		r.Missed = append(r.Missed, fmt.Sprintf("WAL %.0f MiB", mib(r.WALBytes)))
	}
	if r.RelayExit != "" {
		r.Missed = append(r.Missed, "the relay exited: "+r.RelayExit)
	}
	r.Met = len(r.Missed) == 0
}

// Abuse runs the attacks, one per call of Run, keeping what one attack's
// setup stored for the next (the relay's database outlives its process).
type Abuse struct {
	o AbuseOptions
	// innocentKey signs the innocent client's events.
	innocentKey string
	// channel is the open channel the innocent client writes and reads,
	// and the attacker's thread lives in.
	channel string
	info    relayInfo
	// tag marks this run's large events; large counts those stored.
	tag   string
	large int
}

// NewAbuse checks o.
func NewAbuse(o AbuseOptions) (*Abuse, error) {
	switch {
	case o.Duration <= 0:
		return nil, fmt.Errorf("abuse: the duration must be positive, got %s", o.Duration)
	case o.Pace <= 0:
		return nil, fmt.Errorf("abuse: the innocent client's pace must be positive, got %g", o.Pace)
	case o.LargeEvents < 1 || o.Sockets < 1:
		return nil, fmt.Errorf("abuse: need at least one large event and one socket, got %d and %d", o.LargeEvents, o.Sockets)
	}
	for _, a := range []string{o.Attacker, o.Innocent} {
		if ip := net.ParseIP(a); ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("abuse: %q is not a loopback address", a)
		}
	}
	if o.Attacker == o.Innocent {
		return nil, fmt.Errorf("abuse: the attacker and the innocent client share the address %s", o.Attacker)
	}
	return &Abuse{o: o, innocentKey: nostr.GeneratePrivateKey(), tag: "abuse-" + strings.ToLower(rand.Text())}, nil
}

// Attacks names the attacks in the order they are best run: those that
// store what later ones read come first.
func (a *Abuse) Attacks() []string {
	names := make([]string, len(attacks))
	for i, at := range attacks {
		names[i] = at.name
	}
	return names
}

// stopWait bounds how long an attack may take to stop after its time.
const stopWait = 30 * time.Second

// Run runs the attack called name against the relay at t: its setup, then
// the attack and the innocent client together for the run's duration.
func (a *Abuse) Run(ctx context.Context, t Target, name string, p Probe) (AttackResult, error) {
	var at *attack
	for i := range attacks {
		if attacks[i].name == name {
			at = &attacks[i]
		}
	}
	if at == nil {
		return AttackResult{}, fmt.Errorf("abuse: no attack %q", name)
	}
	e, err := a.env(ctx, t, p)
	if err != nil {
		return AttackResult{}, fmt.Errorf("%s: %w", name, err)
	}
	res := AttackResult{Name: name, Does: at.does, Unit: at.unit}
	run := func(ctx context.Context) { <-ctx.Done() }
	if at.prepare != nil {
		sctx, cancel := context.WithTimeout(ctx, setupWait)
		run, err = at.prepare(sctx, e)
		cancel()
		if err != nil {
			return res, fmt.Errorf("%s: setup: %w", name, err)
		}
	}
	// What the setup sent and had refused is the setup's; the attack's
	// accounts start now, and so does its peak.
	e.mu.Lock()
	e.setupRefused, e.refused = e.refused, map[string]int64{}
	e.mu.Unlock()
	e.actions.Store(0)
	e.unanswered.Store(0)
	res.Setup = e.setupNote()
	ic, err := e.connectInnocent(ctx)
	if err != nil {
		return res, fmt.Errorf("%s: %w", name, err)
	}
	p.PeakRSS()

	actx, cancel := context.WithTimeout(ctx, a.o.Duration)
	defer cancel()
	start := time.Now()
	attacked := make(chan struct{})
	var took time.Duration
	go func() {
		defer close(attacked)
		run(actx)
		took = time.Since(start)
	}()
	res.Publish, res.REQ = e.innocent(actx, ic)
	res.ProbeName, res.Probe = e.probeName, e.probes.latency()
	select {
	case <-attacked:
	case <-time.After(time.Until(start.Add(a.o.Duration + stopWait))):
		return res, fmt.Errorf("%s: the attacker did not stop within %s of its end", name, stopWait)
	}
	res.Elapsed, res.PeakRSS = took, p.PeakRSS()
	res.Actions, res.Unanswered = e.actions.Load(), e.unanswered.Load()
	e.mu.Lock()
	res.Refused, res.Notes, res.WALBytes = e.refused, e.notes, e.wal
	e.mu.Unlock()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// env is one attack's view of the relay and its accounts.
type env struct {
	*Abuse
	t     Target
	probe Probe
	// attacker and innocent dial from their addresses.
	attacker, innocentWS dialer
	attackerHTTP         *http.Client

	actions, unanswered atomic.Int64
	mu                  sync.Mutex
	// refused counts the attack's actions refused, by how; setupRefused
	// those of its setup.
	refused, setupRefused map[string]int64
	setup, notes          []string
	wal                   int64
	// probes are what the innocent client saw of probeName, for an
	// attack that has it probe what it takes (innocentProbe).
	probeName string
	probes    *probes
}

// env is a fresh account of an attack on the relay at t. The first one
// reads what the attacker needs to know of the relay: its announced
// limits (NIP-11) and its largest open channel.
func (a *Abuse) env(ctx context.Context, t Target, p Probe) (*env, error) {
	e := &env{Abuse: a, t: t, probe: p, attacker: wsDialer(a.o.Attacker), innocentWS: wsDialer(a.o.Innocent),
		attackerHTTP: httpFrom(a.o.Attacker), refused: map[string]int64{}}
	if a.channel != "" {
		return e, nil
	}
	info, err := fetchInfo(ctx, t)
	if err != nil {
		return nil, err
	}
	chans, err := OpenChannels(ctx, t)
	if err != nil {
		return nil, err
	}
	if len(chans) == 0 {
		return nil, errors.New("the database has no open channel for the innocent client")
	}
	a.info, a.channel = info, chans[0].ID
	return e, nil
}

// act counts an action of the attacker.
func (e *env) act() { e.actions.Add(1) }

// refuse counts an action refused, how.
func (e *env) refuse(how string) { e.refuseN(how, 1) }

// refuseN counts n actions refused, how.
func (e *env) refuseN(how string, n int64) {
	e.mu.Lock()
	e.refused[how] += n
	e.mu.Unlock()
}

func (e *env) note(format string, a ...any) {
	e.mu.Lock()
	e.notes = append(e.notes, fmt.Sprintf(format, a...))
	e.mu.Unlock()
}

func (e *env) setupDone(format string, a ...any) {
	e.mu.Lock()
	e.setup = append(e.setup, fmt.Sprintf(format, a...))
	e.mu.Unlock()
}

// setupNote is what the setup did, with what the relay refused of it.
func (e *env) setupNote() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := ""
	for i, line := range e.setup {
		if i > 0 {
			s += "; "
		}
		s += line
	}
	if len(e.setupRefused) > 0 {
		s += fmt.Sprintf(" (refused and sent again: %s)", refusals(e.setupRefused))
	}
	return s
}
