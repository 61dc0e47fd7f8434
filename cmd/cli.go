package cmd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// What the command line adds to urfave/cli v2 (issue 14): flags are taken
// after the arguments too, and a mistake in the command line is answered
// by the error, then the command's one-line synopsis, not the whole help.

// buzzApp is the command line of buzz-lite.
type buzzApp struct{ *cli.App }

// Run runs the command line args (args[0] is the program).
func (a buzzApp) Run(args []string) error { return a.RunContext(context.Background(), args) }

// RunContext runs the command line args with ctx.
func (a buzzApp) RunContext(ctx context.Context, args []string) error {
	return a.App.RunContext(ctx, flagsFirst(a.App, args))
}

// withUsage makes app answer mistakes in its command lines with a short
// usage line.
func withUsage(app *cli.App) buzzApp {
	usage := fmt.Sprintf("usage: %s COMMAND [options] [arguments] (see %[1]s --help)", app.Name)
	app.OnUsageError = func(c *cli.Context, err error, _ bool) error {
		return fmt.Errorf("%w\n%s", err, usage)
	}
	// Without an action the root answers an unknown command with its help
	// topic lookup ("No help topic for ...") and exit status 3.
	app.Action = func(c *cli.Context) error {
		if c.NArg() > 0 {
			return fmt.Errorf("unknown command %q\n%s", c.Args().First(), usage)
		}
		return cli.ShowAppHelp(c)
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error { return usageErr(c, err) }
	}
	return buzzApp{app}
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

// usageError is a mistake in the command line of a command: its message
// is the error, then the command's synopsis.
type usageError struct {
	app string
	cmd *cli.Command
	err error
}

func (e *usageError) Error() string {
	synopsis := e.cmd.UsageText
	if synopsis == "" {
		synopsis = fmt.Sprintf("%s %s [options] %s", e.app, e.cmd.Name, strings.TrimSpace(e.cmd.ArgsUsage))
	}
	return fmt.Sprintf("%s: %v\nusage: %s (see %s %s --help)", e.cmd.Name, e.err, strings.TrimSpace(synopsis), e.app, e.cmd.Name)
}

func (e *usageError) Unwrap() error { return e.err }

// usageErr makes err a mistake in the command line of c's command.
func usageErr(c *cli.Context, err error) error {
	return &usageError{app: c.App.Name, cmd: c.Command, err: err}
}

// argsBetween refuses, before the command runs, fewer than least or more
// than most arguments; what names the first one.
func argsBetween(least, most int, what string) cli.BeforeFunc {
	return func(c *cli.Context) error {
		switch n := c.NArg(); {
		case n < least:
			return usageErr(c, fmt.Errorf("missing %s", what))
		case n > most:
			return usageErr(c, fmt.Errorf("unexpected argument %q", c.Args().Get(most)))
		}
		return nil
	}
}
