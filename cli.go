package main

import (
	"context"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// What the command line adds to urfave/cli v2 (issue 14): flags are taken
// after the arguments too.

// buzzApp is the command line of buzz-lite.
type buzzApp struct{ *cli.App }

// Run runs the command line args (args[0] is the program).
func (a buzzApp) Run(args []string) error { return a.RunContext(context.Background(), args) }

// RunContext runs the command line args with ctx.
func (a buzzApp) RunContext(ctx context.Context, args []string) error {
	return a.App.RunContext(ctx, flagsFirst(a.App, args))
}

// flagsFirst moves a command's flags before its arguments: urfave/cli v2
// leaves Go's flag package to parse them, which stops at the first
// argument, and `backup PATH --force` must mean `backup --force PATH`. A
// flag that takes a value keeps it (`-o FILE`); "--" ends the flags, as
// it does for the flag package; "-" is an argument (standard input).
func flagsFirst(app *cli.App, args []string) []string {
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		i++ // the root's own flags (--help, --version) take no value
	}
	if i >= len(args) {
		return args
	}
	cmd := app.Command(args[i])
	if cmd == nil {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		df, ok := f.(cli.DocGenerationFlag)
		for _, name := range f.Names() {
			takesValue[name] = ok && df.TakesValue()
		}
	}
	out := slices.Clone(args[:i+1])
	var positional []string
	rest := args[i+1:]
	for j := 0; j < len(rest); j++ {
		arg := rest[j]
		if arg == "--" {
			positional = append(positional, rest[j+1:]...)
			break
		}
		if len(arg) < 2 || arg[0] != '-' {
			positional = append(positional, arg)
			continue
		}
		out = append(out, arg)
		if name := strings.TrimLeft(arg, "-"); !strings.Contains(name, "=") && takesValue[name] && j+1 < len(rest) {
			j++
			out = append(out, rest[j])
		}
	}
	if len(positional) == 0 {
		return out
	}
	// After "--" an argument that looks like a flag stays an argument.
	return append(append(out, "--"), positional...)
}
