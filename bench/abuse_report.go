package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// AbuseReport is a whole abuse run.
type AbuseReport struct {
	Machine string `json:"machine"`
	Cores   int    `json:"cores"`
	// Events is how many events the database held before the run, and
	// Channel the channel the innocent client writes and reads.
	Events  int64  `json:"events"`
	Channel string `json:"channel"`
	// Duration is each attack's, Pace the innocent client's publishes
	// and REQs a second.
	Duration time.Duration  `json:"duration_ns"`
	Pace     float64        `json:"pace"`
	Attacker string         `json:"attacker"`
	Innocent string         `json:"innocent"`
	Results  []AttackResult `json:"results"`
}

// Channel is the channel the innocent client writes and reads, once the
// first attack has found it.
func (a *Abuse) Channel() string { return a.channel }

// WriteText prints the report: a table of the attacks, what each did and
// had refused, and the verdicts against RL-27.
func (r AbuseReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "machine: %s, %d cores\n", r.Machine, r.Cores)
	fmt.Fprintf(&b, "database: %d events before the run; the innocent client (%s) publishes to and REQs channel %s, %g a second each;\n",
		r.Events, r.Innocent, r.Channel, r.Pace)
	fmt.Fprintf(&b, "the attacker dials from %s; each attack lasts %s against a relay started for it with its default limits\n\n",
		r.Attacker, r.Duration)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "attack\tactions\trefused\tpublish p50\tp95\tREQ p50\tp95\tpeak anon\tverdict\t")
	for _, x := range r.Results {
		verdict := "met"
		if !x.Met {
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", x.Name, strings.TrimSpace(fmt.Sprintf("%d %s", x.Actions, x.Unit)), total(x.Refused),
			ms(x.Publish.P50), ms(x.Publish.P95), ms(x.REQ.P50), ms(x.REQ.P95), rssMiB(x.PeakRSS), verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, x := range r.Results {
		fmt.Fprintf(&b, "\n%s: %s\n", x.Name, x.Does)
		if x.Setup != "" {
			fmt.Fprintf(&b, "  setup: %s\n", x.Setup)
		}
		if x.Unit != "" {
			fmt.Fprintf(&b, "  %d %s in %.1f s", x.Actions, x.Unit, x.Elapsed.Seconds())
			if len(x.Refused) > 0 {
				fmt.Fprintf(&b, "; refused: %s", refusals(x.Refused))
			}
			if x.Unanswered > 0 {
				fmt.Fprintf(&b, "; %d unanswered when it ended", x.Unanswered)
			}
			b.WriteString("\n")
		}
		for _, n := range x.Notes {
			fmt.Fprintf(&b, "  %s\n", n)
		}
		fmt.Fprintf(&b, "  innocent: %s; %s\n", x.Publish.describe("publishes"), x.REQ.describe("REQs"))
		if x.Probe != nil {
			fmt.Fprintf(&b, "  innocent: %s, p50 %s, p95 %s\n", x.Probe.describe(x.ProbeName), ms(x.Probe.P50), ms(x.Probe.P95))
		}
		if x.RelayWarnings > 0 {
			fmt.Fprintf(&b, "  the relay logged %d warnings or errors, the first: %s\n", x.RelayWarnings, x.FirstWarning)
		}
		if x.RelayExit != "" {
			fmt.Fprintf(&b, "  the relay exited: %s\n", x.RelayExit)
		}
	}
	fmt.Fprintf(&b, "\nverdicts (RL-27: the innocent client's p95 under %s, none of its operations failed, the relay's peak anonymous RSS under %.0f MiB; RL-27a: the WAL under %.0f MiB):\n",
		ms(AbuseTargets.P95), mib(AbuseTargets.PeakRSS), mib(AbuseTargets.WAL))
	for _, x := range r.Results {
		if x.Met {
			fmt.Fprintf(&b, "  met     %s\n", x.Name)
		} else {
			fmt.Fprintf(&b, "  MISSED  %s: %s\n", x.Name, strings.Join(x.Missed, ", "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// describe says how many of l's operations were answered and how the
// others failed.
func (l Latency) describe(what string) string {
	s := fmt.Sprintf("%d %s answered (p99 %s)", l.Ops, what, ms(l.P99))
	if len(l.Failed) > 0 {
		s += ", failed: " + refusals(l.Failed)
	}
	return s
}

func total(by map[string]int64) int64 {
	var n int64
	for _, c := range by {
		n += c
	}
	return n
}

// mib is n bytes in MiB, the unit of RL-27's memory bound.
func mib(n int64) float64 { return float64(n) / (1 << 20) }

func rssMiB(n int64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", mib(n))
}
