package cmd

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// Issue 29 item 10: without --relay and without a configuration, a client
// command talks to the relay `buzz-lite serve` starts with no arguments.
func TestRelayDefault(t *testing.T) {
	testutil.ClearEnv(t)
	var got string
	cmd := &cli.Command{Name: "client", Flags: clientFlags(), Action: func(c *cli.Context) error {
		var err error
		got, err = relayFlag(c)
		return err
	}}
	app := &cli.App{Name: "buzz-lite", Commands: []*cli.Command{cmd}, ExitErrHandler: func(*cli.Context, error) {}}
	if err := app.Run([]string{"buzz-lite", "client"}); err != nil {
		t.Fatal(err)
	}
	if got != "ws://127.0.0.1:7777" {
		t.Fatalf("relay without --relay = %q, want ws://127.0.0.1:7777", got)
	}
	if listen := runServeConfigListen(t); "ws://"+listen != got {
		t.Fatalf("serve with no arguments listens on %s, the client default is %s", listen, got)
	}
}

// runServeConfigListen is the address `serve` with no arguments listens on.
func runServeConfigListen(t *testing.T) string {
	cfg, err := runServeConfig(t)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Server.Listen
}

// Issue 29 item 10: every client command runs without --relay against
// the relay the environment's serve address names, as `serve` would
// listen on it: post, then channels, window and feed read what it wrote.
func TestClientCommandsWithoutRelay(t *testing.T) {
	testutil.ClearEnv(t)
	url, _ := wnServe(t)
	t.Setenv("BUZZ_LITE_SERVER_LISTEN", strings.TrimPrefix(url, "ws://"))
	me := testutil.NewSigner(t)
	const ch = "lobby"
	id := postID(t, "--key", me.SK, "--channel", ch, "hello from no --relay")
	for _, args := range [][]string{
		{"channels"},
		{"window", "--channel", ch},
		{"feed"},
	} {
		out, err := runApp(args...)
		if err != nil {
			t.Fatalf("%s: %v", args[0], err)
		}
		if !strings.Contains(out, ch) && !strings.Contains(out, "hello from no --relay") {
			t.Errorf("%s printed %q, want the message %s or its channel", args[0], out, id)
		}
	}
}
