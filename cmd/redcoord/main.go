// Command redcoord shows and repairs redcoord's state in Redis: who holds
// each name, who waits, and since when.
//
//	redcoord [flags] ls [PATTERN]        every name in use, one line each
//	redcoord [flags] inspect NAME        the whole state of one name
//	redcoord [flags] force-unlock NAME   end the hold of a lock, after a confirmation
//	redcoord [flags] watch NAME          the state again on every change
//
// It reads the keys of the library's key schema with SCAN (never KEYS), on
// every primary of a Cluster, and changes nothing but what force-unlock
// forces. The exit status is 0 on success, 1 when nothing matched (no such
// name, nothing to force, or the force was not confirmed), 2 on a usage or
// connection error. See docs/cli.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/redis/go-redis/v9/logging"
)

func main() {
	logging.Disable() // go-redis's pool logs each failed dial; run reports the failure once
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK       = 0
	exitNotFound = 1 // nothing matched, nothing to force, or not confirmed
	exitError    = 2 // usage, connection or server error
)

// errNotFound marks an error whose exit status is exitNotFound.
var errNotFound = errors.New("not found")

// usageError is a mistake in the command line: its exit status is
// exitError, and the usage follows its message.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// command is one subcommand: its arguments' synopsis and its body, which
// runs with the flags parsed and the connection made.
type command struct {
	args    string
	minArgs int
	maxArgs int
	do      func(ctx context.Context, e *env, args []string) error
}

var commands = map[string]command{
	"ls":           {args: "[PATTERN]", maxArgs: 1, do: ls},
	"inspect":      {args: "NAME", minArgs: 1, maxArgs: 1, do: inspect},
	"force-unlock": {args: "NAME", minArgs: 1, maxArgs: 1, do: forceUnlock},
	"watch":        {args: "NAME", minArgs: 1, maxArgs: 1, do: watch},
}

// env is what a command runs with.
type env struct {
	cfg    *config
	conn   *conn
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// run is the whole command: it parses args (the flags, the command, its
// flags and arguments), connects, runs the command and returns the exit
// status. SIGINT cancels it.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return runContext(ctx, args, stdin, stdout, stderr)
}

// runContext is run, cancelled by ctx's end instead of SIGINT.
func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg := defaults()
	global := cfg.flagSet("redcoord", stderr)
	if err := global.Parse(args); err != nil {
		return parseFailed(err) // flag printed the error and the usage
	}
	rest := global.Args()
	if len(rest) == 0 {
		fmt.Fprintln(stderr, "redcoord: no command given")
		global.Usage()
		return exitError
	}
	name, rest := rest[0], rest[1:]
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "redcoord: unknown command %q (commands: ls, inspect, force-unlock, watch)\n", name)
		return exitError
	}
	// The command's own flags are the same set, so that "ls -json" and
	// "-json ls" both work; arguments and flags may be mixed after it.
	fs := cfg.flagSet("redcoord "+name, stderr)
	var pos []string
	for {
		if err := fs.Parse(rest); err != nil {
			return parseFailed(err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos, rest = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if len(pos) < cmd.minArgs || len(pos) > cmd.maxArgs {
		fmt.Fprintf(stderr, "redcoord %s: usage: redcoord [flags] %s %s\n", name, name, cmd.args)
		return exitError
	}
	if err := cfg.check(); err != nil {
		fmt.Fprintf(stderr, "redcoord: %v\n", err)
		return exitError
	}
	c, err := cfg.connect(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "redcoord: %v\n", err)
		return exitError
	}
	defer c.close()
	e := &env{cfg: cfg, conn: c, stdin: stdin, stdout: stdout, stderr: stderr}
	if err := cmd.do(ctx, e, pos); err != nil {
		fmt.Fprintf(stderr, "redcoord %s: %v\n", name, err)
		var u usageError
		if errors.As(err, &u) {
			return exitError
		}
		if errors.Is(err, errNotFound) {
			return exitNotFound
		}
		return exitError
	}
	return exitOK
}

// parseFailed returns the exit status of a failed flag.Parse: 0 for -h,
// which asked for the usage it printed.
func parseFailed(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitError
}

// usage prints the synopsis and the flags of fs.
func usage(fs *flag.FlagSet) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: redcoord [flags] COMMAND [flags] [ARGS]")
		fmt.Fprintln(w, "commands:")
		for _, n := range []string{"ls", "inspect", "force-unlock", "watch"} {
			fmt.Fprintf(w, "  %s %s\n", n, commands[n].args)
		}
		fmt.Fprintln(w, "flags:")
		fs.PrintDefaults()
	}
}
