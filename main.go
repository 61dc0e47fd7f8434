// Command buzz-lite is a single-binary nostr relay for threaded group chat
// on embedded SQLite. Its commands are package cmd's, one file each; the
// load and attack harness is a program of its own, cmd/buzz-lite-bench.
package main

import (
	"os"

	"github.com/buzz-lite/buzz-lite/cmd"
)

// version overrides the version the build tells, when set with -ldflags
// "-X main.version=..." (the release script and the Dockerfile stamp one).
var version string

func main() {
	cmd.Version = version
	cmd.Schema = schema
	os.Exit(cmd.Main(os.Args))
}
