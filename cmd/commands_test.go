package cmd

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/importer"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// toolData makes a data directory holding events of two channels.
func toolData(t *testing.T) (dir string, evs []*nostr.Event) {
	t.Helper()
	dir = t.TempDir()
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(dir, DBFile), Schema: Schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := testutil.NewSigner(t)
	for i, ch := range []string{"11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"} {
		for j := range 3 {
			ev := a.Event(t, 9, int64(1000+10*i+j), "m", nostr.Tag{"h", ch})
			if err := s.Ingest(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
		}
	}
	return dir, evs
}

// RL-25: export and backup take --data like serve, refuse a directory with
// no database, and write where they are told.
func TestExportAndBackupCommands(t *testing.T) {
	dir, evs := toolData(t)
	out := filepath.Join(t.TempDir(), "dump.jsonl")
	if err := newApp().Run([]string{"buzz-lite", "export", "--data", dir, "--channel", "22222222-2222-4222-8222-222222222222", "-o", out}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev nostr.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ID)
	}
	if len(ids) != 3 || ids[0] != evs[3].ID || ids[2] != evs[5].ID {
		t.Fatalf("exported %v, want the second channel's three events oldest first", ids)
	}

	if err := newApp().Run([]string{"buzz-lite", "export", "--data", dir, "--kinds", "9,x"}); err == nil || !strings.Contains(err.Error(), "--kinds") {
		t.Fatalf("bad --kinds: %v", err)
	}
	empty := t.TempDir()
	if err := newApp().Run([]string{"buzz-lite", "export", "--data", empty}); err == nil || !strings.Contains(err.Error(), "no buzz-lite database") {
		t.Fatalf("export of an empty directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(empty, DBFile)); err == nil {
		t.Fatal("export created a database")
	}

	bk := filepath.Join(t.TempDir(), "snap.db")
	if err := newApp().Run([]string{"buzz-lite", "backup", "--data", dir, bk}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(bk); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", st, err)
	}
	if err := newApp().Run([]string{"buzz-lite", "backup", "--data", dir, bk}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second backup without --force: %v", err)
	}
	if err := newApp().Run([]string{"buzz-lite", "backup", "--data", dir, "--force", bk}); err != nil {
		t.Fatal(err)
	}
	if err := newApp().Run([]string{"buzz-lite", "backup", "--data", dir}); err == nil {
		t.Fatal("backup without a PATH succeeded")
	}
}

// CW-2, RL-36: export --channel takes a NIP-29 group id as it is, letter
// case included, and writes that channel's events, its 9007 included; a
// UUID in any spelling names its channel; what is not a channel id is a
// usage error, not an empty export.
func TestExportGroupID(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(dir, DBFile), Schema: Schema})
	if err != nil {
		t.Fatal(err)
	}
	a := testutil.NewSigner(t)
	const group, uuid = "p0ZPf6Xc6Ngx7TZFdJHcWRxY", "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"
	evs := []*nostr.Event{
		a.Event(t, buzz.KindCreateChannel, 1000, "", nostr.Tag{"h", group}),
		a.Event(t, 9, 1001, "in", nostr.Tag{"h", group}),
		a.Event(t, 9, 1002, "elsewhere", nostr.Tag{"h", strings.ToLower(group)}),
		a.Event(t, 9, 1003, "elsewhere", nostr.Tag{"h", group + "."}),
		a.Event(t, buzz.KindCreateChannel, 1004, "", nostr.Tag{"h", uuid}),
	}
	for _, ev := range evs {
		if err := s.Ingest(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	export := func(channel string) []string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "dump.jsonl")
		if err := newApp().Run([]string{"buzz-lite", "export", "--data", dir, "--channel", channel, "-o", out}); err != nil {
			t.Fatalf("export --channel %s: %v", channel, err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var ev nostr.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ev.ID)
		}
		return ids
	}
	if ids := export(group); !slices.Equal(ids, []string{evs[0].ID, evs[1].ID}) {
		t.Fatalf("exported %v, want the 9007 and the message of %s", ids, group)
	}
	if ids := export("{" + strings.ToUpper(uuid) + "}"); !slices.Equal(ids, []string{evs[4].ID}) {
		t.Fatalf("exported %v, want the 9007 of %s", ids, uuid)
	}
	if err := newApp().Run([]string{"buzz-lite", "export", "--data", dir, "--channel", "a b", "-o", filepath.Join(t.TempDir(), "x")}); err == nil ||
		!strings.Contains(err.Error(), "is not a channel id") {
		t.Fatalf("export --channel 'a b': %v, want a usage error", err)
	}
}

// Issue 8: what export writes, import stores again, into a new data
// directory: the same events; a second import of the file changes nothing.
func TestExportImportRoundTrip(t *testing.T) {
	dir, evs := toolData(t)
	out := filepath.Join(t.TempDir(), "dump.jsonl")
	if err := newApp().Run([]string{"buzz-lite", "export", "--data", dir, "-o", out}); err != nil {
		t.Fatal(err)
	}
	fresh := t.TempDir()
	for range 2 {
		if err := newApp().Run([]string{"buzz-lite", "import", "--data", fresh, out}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(fresh, DBFile), Schema: Schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Query(context.Background(), nostr.Filter{}, buzz.Anonymous)
	if err != nil {
		t.Fatal(err)
	}
	// The relay's own group state is not exported; import signs it anew.
	got = slices.DeleteFunc(got, func(ev *nostr.Event) bool { return buzz.IsRelayOnlyKind(ev.Kind) })
	if len(got) != len(evs) {
		t.Fatalf("imported %d events, exported %d", len(got), len(evs))
	}
	for i, ev := range got {
		if want := evs[len(evs)-1-i]; ev.ID != want.ID || ev.Sig != want.Sig {
			t.Fatalf("event %d: %s, want %s", i, ev.ID, want.ID)
		}
	}
	if err := newApp().Run([]string{"buzz-lite", "import", "--data", fresh, "a", "b"}); err == nil {
		t.Fatal("import of two files succeeded")
	}
}

// Issue 8: check exits non-zero when something is wrong and zero once
// --repair fixed it; backfill runs on a data directory.
func TestCheckAndBackfillCommands(t *testing.T) {
	dir, _ := toolData(t)
	if err := newApp().Run([]string{"buzz-lite", "check", "--data", dir}); err != nil {
		t.Fatalf("check of a healthy database: %v", err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO tags (name, value, created_at, seq, kind) VALUES ('x', 'stray', 1, 1, 9)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := newApp().Run([]string{"buzz-lite", "check", "--data", dir}); err == nil {
		t.Fatal("check of a damaged database succeeded")
	}
	if err := newApp().Run([]string{"buzz-lite", "check", "--data", dir, "--repair"}); err != nil {
		t.Fatalf("check --repair: %v", err)
	}
	if err := newApp().Run([]string{"buzz-lite", "check", "--data", dir}); err != nil {
		t.Fatalf("check after repair: %v", err)
	}
	if err := newApp().Run([]string{"buzz-lite", "backfill", "--data", dir}); err != nil {
		t.Fatalf("backfill: %v", err)
	}
	if err := newApp().Run([]string{"buzz-lite", "check", "--data", t.TempDir()}); err == nil {
		t.Fatal("check of an empty directory succeeded")
	}
}

// RL-2, issue 8: the operator's commands refuse a file that is not a
// buzz-lite database, with a message that says so.
func TestCommandsRefuseForeignFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DBFile), []byte("this is not a database, just some text that is long enough"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"check", "export", "backfill"} {
		err := newApp().Run([]string{"buzz-lite", cmd, "--data", dir})
		if err == nil || !strings.Contains(err.Error(), "not a buzz-lite database") {
			t.Errorf("%s on a text file: %v", cmd, err)
		}
	}
	if err := newApp().Run([]string{"buzz-lite", "backup", "--data", dir, filepath.Join(t.TempDir(), "b.db")}); err == nil || !strings.Contains(err.Error(), "not a buzz-lite database") {
		t.Errorf("backup of a text file: %v", err)
	}
}

// runApp runs the command line args with its output captured.
func runApp(args ...string) (stdout string, err error) {
	app := newApp()
	var out, errOut strings.Builder
	app.Writer, app.ErrWriter = &out, &errOut
	err = app.Run(append([]string{"buzz-lite"}, args...))
	return out.String(), err
}

// jsonLines writes evs and the extra lines to a file, one a line.
func jsonLines(t *testing.T, evs []*nostr.Event, extra ...string) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.String() + "\n")
	}
	for _, line := range extra {
		b.WriteString(line + "\n")
	}
	return testutil.WriteFile(t, "events.jsonl", b.String())
}

// Issue 14, RL-25: import exits zero only when every line went in; with a
// rejected line it exits non-zero, after the summary that says why, and
// still stores the good lines; --strict stops at the first bad one.
func TestImportExitCode(t *testing.T) {
	a := testutil.NewSigner(t)
	const ch = "33333333-3333-4333-8333-333333333333"
	good := []*nostr.Event{a.Event(t, 9, 1000, "one", nostr.Tag{"h", ch}), a.Event(t, 9, 1001, "two", nostr.Tag{"h", ch})}

	out, err := runApp("import", "--data", t.TempDir(), jsonLines(t, good))
	if err != nil {
		t.Fatalf("import of good lines only: %v\n%s", err, out)
	}
	if !strings.HasPrefix(out, "2 lines in ") || !strings.Contains(out, "2 accepted") {
		t.Fatalf("summary %q", out)
	}

	dir := t.TempDir()
	out, err = runApp("import", "--data", dir, jsonLines(t, good, "not json"))
	if err == nil || err.Error() != "import: 1 line rejected (the summary above says why)" {
		t.Fatalf("import with a bad line: %v", err)
	}
	if !strings.Contains(out, "2 accepted") || !strings.Contains(out, "1 rejected") {
		t.Fatalf("summary %q", out)
	}
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(dir, DBFile), Schema: Schema})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Query(context.Background(), nostr.Filter{Kinds: []int{9}}, buzz.Anonymous)
	s.Close()
	if err != nil || len(got) != 2 {
		t.Fatalf("stored %d messages (%v), want the 2 good ones", len(got), err)
	}

	if p := progressLine(10, 0, 1, time.Second); !strings.HasPrefix(p, "\r1 line, 1/s") {
		t.Errorf("progress %q", p)
	}

	_, err = runApp("import", "--data", t.TempDir(), "--strict", jsonLines(t, good[:1], "not json", "nor this"))
	if !errors.Is(err, importer.ErrStrict) || !strings.Contains(err.Error(), "line 2:") {
		t.Fatalf("import --strict: %v", err)
	}
}

// Issue 14: flags are taken after the arguments too, a flag that takes a
// value keeps it, and "--" ends the flags.
func TestFlagsFirst(t *testing.T) {
	app := newApp().App
	for _, tc := range []struct{ in, want string }{
		{"backup /b.db --force", "backup --force -- /b.db"},
		{"backup /b.db --data /d --force", "backup --data /d --force -- /b.db"},
		{"export -o /out --channel c --data /d", "export -o /out --channel c --data /d"},
		{"export --kinds=9,7 --data /d", "export --kinds=9,7 --data /d"},
		{"import - --strict --data /d", "import --strict --data /d -- -"},
		{"import --data /d -- --odd-name --strict", "import --data /d -- --odd-name --strict"},
		{"import f.jsonl --no-verify -- g", "import --no-verify -- f.jsonl g"},
		{"--help", "--help"},
		{"nosuch a --b", "nosuch a --b"},
	} {
		got := strings.Join(flagsFirst(app, append([]string{"buzz-lite"}, strings.Fields(tc.in)...))[1:], " ")
		if got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
}

// Issue 14: backup, export and import take their flags after their
// arguments as before them.
func TestFlagsAfterArguments(t *testing.T) {
	dir, _ := toolData(t)
	bk := filepath.Join(t.TempDir(), "snap.db")
	if _, err := runApp("backup", bk, "--data", dir); err != nil {
		t.Fatalf("backup PATH --data DIR: %v", err)
	}
	if _, err := runApp("backup", bk, "--data", dir, "--force"); err != nil {
		t.Fatalf("backup PATH --data DIR --force: %v", err)
	}
	out := filepath.Join(t.TempDir(), "dump.jsonl")
	if _, err := runApp("export", "-o", out, "--kinds", "9", "--data", dir); err != nil {
		t.Fatalf("export: %v", err)
	}
	if _, err := runApp("import", out, "--data", t.TempDir()); err != nil {
		t.Fatalf("import FILE --data DIR: %v", err)
	}
	bad := testutil.WriteFile(t, "bad.jsonl", "not json\nnor this\n")
	if _, err := runApp("import", bad, "--data", t.TempDir(), "--strict"); !errors.Is(err, importer.ErrStrict) {
		t.Fatalf("import FILE --strict did not stop at the first bad line: %v", err)
	}
}

// Issue 14: a mistake in the command line is answered by the error first,
// then the command's one-line synopsis, and not by the whole help.
func TestUsageErrors(t *testing.T) {
	dir, _ := toolData(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"backup", "--data", dir}, "backup: missing destination path\n" +
			"usage: buzz-lite backup [--force] PATH (see buzz-lite backup --help)"},
		{[]string{"window", "--relay", "ws://127.0.0.1:1"}, "window: missing --channel\n" +
			"usage: buzz-lite window [--relay URL] (--channel ID [--limit N] [--all] [--follow] | --thread ID) [--key nsec|hex|file] [--json] (see buzz-lite window --help)"},
		{[]string{"check", "--data", dir, "--bogus"}, "check: flag provided but not defined: -bogus\n" +
			"usage: buzz-lite check [--repair [--rekey]] (see buzz-lite check --help)"},
		{[]string{"import", "a", "b"}, "import: unexpected argument \"b\"\n" +
			"usage: buzz-lite import [--strict] [--no-verify] [FILE|-] (see buzz-lite import --help)"},
		{[]string{"nosuch"}, "unknown command \"nosuch\"\n" +
			"usage: buzz-lite COMMAND [options] [arguments] (see buzz-lite --help)"},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus\n" +
			"usage: buzz-lite COMMAND [options] [arguments] (see buzz-lite --help)"},
	} {
		app := newApp()
		var out, errOut strings.Builder
		app.Writer, app.ErrWriter = &out, &errOut
		err := app.Run(append([]string{"buzz-lite"}, tc.args...))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: error %q, want %q", tc.args, err, tc.want)
		}
		if out.Len() > 0 || errOut.Len() > 0 {
			t.Errorf("%v printed more than the error:\n%s%s", tc.args, out.String(), errOut.String())
		}
	}
}

// groupStateSigners counts the group state (39000-39003) of the data
// directory dir by signer.
func groupStateSigners(t *testing.T, dir string) map[string]int {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(dir, DBFile), Schema: Schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	query := func(f nostr.Filter) ([]*nostr.Event, error) { return s.Query(context.Background(), f, buzz.Anonymous) }
	return testutil.Signers(t, query, nostr.Filter{Kinds: []int{39000, 39001, 39002, 39003}})
}

// Issue 14, RL-11, RL-21: moving a community by export and import signs
// its group state with the new data directory's relay key; copying the
// old relay.key in afterwards is found by check (exit non-zero) and
// check --repair signs the state with the key now in the directory.
func TestMoveThenCopyRelayKey(t *testing.T) {
	old, _ := toolData(t)
	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	if _, err := runApp("export", "--data", old, "-o", dump); err != nil {
		t.Fatal(err)
	}
	moved := t.TempDir()
	if _, err := runApp("import", "--data", moved, dump); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(moved, "relay.key")
	b, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	newPK, _ := nostr.GetPublicKey(strings.TrimSpace(string(b)))
	if got := groupStateSigners(t, moved); got[newPK] != 8 || len(got) != 1 {
		t.Fatalf("group state after the import: %v, want 8 (4 kinds of 2 channels) by the data directory's key %s", got, newPK)
	}
	if out, err := runApp("check", "--data", moved); err != nil || out != "ok\n" {
		t.Fatalf("check after the import: %q, %v", out, err)
	}

	oldKey := nostr.GeneratePrivateKey()
	oldPK, _ := nostr.GetPublicKey(oldKey)
	if err := os.WriteFile(keyFile, []byte(oldKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runApp("check", "--data", moved)
	if err == nil || !strings.Contains(err.Error(), "group state") {
		t.Fatalf("check with the old key copied in: %v", err)
	}
	if want := "group state: kind 39000 of channel 11111111-1111-4111-8111-111111111111 is signed by " + newPK +
		", not by the relay key " + oldPK + "\n"; !strings.HasPrefix(out, want) {
		t.Fatalf("check said %q, want it to begin with %q", out, want)
	}
	if out, err := runApp("check", "--data", moved, "--repair"); err != nil || !strings.HasSuffix(out, "repaired\n") {
		t.Fatalf("check --repair: %q, %v", out, err)
	}
	if got := groupStateSigners(t, moved); got[oldPK] != 8 || len(got) != 1 {
		t.Fatalf("group state after the repair: %v, want 8 (4 kinds of 2 channels) by the relay key %s", got, oldPK)
	}
	if out, err := runApp("check", "--data", moved); err != nil || out != "ok\n" {
		t.Fatalf("check after the repair: %q, %v", out, err)
	}
}

// CW-10: backfill --reclassify makes a root-only reply stored top-level
// before CW-10 changed a reply of its root, and check passes after it.
func TestBackfillReclassifyCommand(t *testing.T) {
	dir, evs := toolData(t)
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(dir, DBFile), Schema: Schema})
	if err != nil {
		t.Fatal(err)
	}
	reply := testutil.NewSigner(t).Event(t, 9, 2000, "direct reply", evs[0].Tags[0], nostr.Tag{"e", evs[0].ID, "", "root"})
	if err := s.Ingest(context.Background(), reply); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// As ingest stored it before the change: top-level, a row.
	if _, err := db.Exec(`UPDATE events SET parent = NULL, root = NULL, depth = 0, row_class = 2 WHERE id = x'` + reply.ID + `'`); err != nil {
		t.Fatal(err)
	}
	if _, err := runApp("check", "--data", dir, "--repair"); err != nil {
		t.Fatalf("check --repair: %v", err)
	}
	out, err := runApp("backfill", "--data", dir)
	if err != nil || strings.Contains(out, "reclassified") {
		t.Fatalf("backfill without --reclassify: %q, %v", out, err)
	}
	out, err = runApp("backfill", "--data", dir, "--reclassify")
	if err != nil || !strings.Contains(out, "reclassified 1 root-only reply as replies of their root, 0 kept top-level") {
		t.Fatalf("backfill --reclassify: %q, %v", out, err)
	}
	var depth int
	if err := db.QueryRow(`SELECT depth FROM events WHERE id = x'` + reply.ID + `'`).Scan(&depth); err != nil || depth != 1 {
		t.Fatalf("depth %d, %v", depth, err)
	}
	if out, err := runApp("check", "--data", dir); err != nil {
		t.Fatalf("check after reclassify: %q, %v", out, err)
	}
}

// RL-31: import checks, as serve does, that it can write the data
// directory and its database before it reads a line: a read-only database
// is refused with a message naming it, not found at the first event.
func TestImportRefusesReadOnly(t *testing.T) {
	dir, evs := toolData(t)
	db := filepath.Join(dir, DBFile)
	testutil.Unwritable(t, db)
	in := testutil.WriteFile(t, "in.jsonl", jsonLines(t, evs[:1]))
	_, err := runApp("import", "--data", dir, in)
	if err == nil || !strings.HasPrefix(err.Error(), "database file is not writable: open "+db+": ") {
		t.Errorf("import into a read-only database: %v", err)
	}

	ro := t.TempDir()
	testutil.Unwritable(t, ro)
	_, err = runApp("import", "--data", ro, in)
	if err == nil || !strings.HasPrefix(err.Error(), "data directory "+ro+" is not writable: ") {
		t.Errorf("import into a read-only directory: %v", err)
	}
}
