package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// Issue 29 item 3, RL-27a: the statements of NIP-98 tokens search their
// indexes however many tokens the table holds: recording one looks its
// key up in the primary key, the purge finds the expired along
// nip98_tokens_expires. Checked with their arguments and as generic plans,
// on 100,000 tokens of which a hundred have expired.
func TestTokenPlans(t *testing.T) {
	s := suiteOpen(t, pgtest.FreshDatabase(t), storetest.Config{})
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO nip98_tokens (sig, expires)
			SELECT substring(sha256(int8send(g)) FOR 16), 1700000000 + g / 100 FROM generate_series(1, 100000) g`,
		`ANALYZE nip98_tokens`,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	generic := genericConn(t, s.url)
	for _, p := range []struct {
		name, sql, usesIx string
		args              []any
	}{
		{"spend", spendTokenSQL, "nip98_tokens_pkey", []any{[]byte("0123456789abcdef"), int64(1700000600)}},
		{"purge", purgeTokensSQL, "nip98_tokens_expires", []any{int64(1700000001), buzz.TokenBatch}},
	} {
		if plan := genericPlan(t, generic, p.sql); len(planScans(plan)) > 0 {
			t.Errorf("%s: want a generic plan without a scan of a table that grows:\n%s", p.name, plan)
		}
		plan := explain(t, s.pool, p.sql, p.args...)
		if !strings.Contains(plan, p.usesIx) || len(planScans(plan)) > 0 {
			t.Errorf("%s: want a plan driven by %s, without a scan of a table that grows:\n%s", p.name, p.usesIx, plan)
		}
	}
}
