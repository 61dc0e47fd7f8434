package cmd

// The command line of the relay binary: its commands, one file each.

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

// Main runs the command line args (args[0] is the program) and returns
// the process's exit status: a failure is told on stderr.
func Main(args []string) int {
	if err := newApp().Run(args); err != nil {
		fmt.Fprintln(os.Stderr, "buzz-lite:", err)
		return 1
	}
	return 0
}

func newApp() buzzApp {
	return withUsage(&cli.App{
		Name:    "buzz-lite",
		Usage:   "a single-binary nostr relay for threaded group chat",
		Version: buildVersion(),
		Commands: []*cli.Command{
			serveCommand(),
			exportCommand(),
			backupCommand(),
			importCommand(),
			checkCommand(),
			backfillCommand(),
			windowCommand(),
			keygenCommand(),
			postCommand(),
			channelsCommand(),
			feedCommand(),
			syncCommand(),
		},
	})
}
