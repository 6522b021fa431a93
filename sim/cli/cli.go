// Package cli is the `sim` command: every subcommand parses its own flags
// here and nowhere else. main runs Run under Signals' context, and tests
// call Run with their own context and streams.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/connlab/connlab/sim/lab"
)

// Env is what a command sees of the world.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

type command struct {
	name    string
	summary string
	usage   string // after "sim NAME"
	example string
	run     func(ctx context.Context, env *Env, args []string) error
}

// commands are the sim command's subcommands, one file each.
func commands() []*command {
	return []*command{
		runCommand(), labCommand(), paramsCommand(), schemaCommand(), exerciseCommand(),
		validateCommand(), upstreamCommand(), serveCommand(), importCommand(),
	}
}

// exitError carries an exit status without an extra message.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// usageError is bad usage: the command's help follows the message.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// Run executes `sim args...` and returns the process exit status: 0 on
// success, 1 when a check failed, 2 for bad usage or input, or when writing
// to standard output failed, 130 when ctx was cancelled (Ctrl-C).
func Run(ctx context.Context, env *Env, args []string) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &output{w: env.Stdout, cancel: cancel}
	e := *env
	e.Stdout = out
	name, err := dispatch(ctx, &e, args)
	var ee exitError
	var ue usageError
	switch {
	case out.failed() != nil:
		// A failed write stops the command; whatever it returned follows
		// from that.
		fmt.Fprintf(env.Stderr, "%s: writing output: %v\n", name, out.failed())
		return 2
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ee):
		return int(ee)
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "%s: %s\n", name, ue.msg)
		if c := find(strings.TrimPrefix(name, "sim ")); c != nil {
			fmt.Fprintf(env.Stderr, "usage: sim %s %s\n(sim %s --help for more)\n", c.name, c.usage, c.name)
		} else {
			fmt.Fprintln(env.Stderr)
			printHelp(env.Stderr)
		}
		return 2
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(env.Stderr, "%s: interrupted\n", name)
		return 130
	default:
		fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
		return 2
	}
}

// dispatch runs the command that args name, and returns the name its
// messages start with ("sim run").
func dispatch(ctx context.Context, env *Env, args []string) (string, error) {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			if c := find(args[1]); c != nil {
				printCommandHelp(env.Stdout, c, nil)
				return "sim", nil
			}
		}
		printHelp(env.Stdout)
		if len(args) == 0 {
			return "sim", exitError(2)
		}
		return "sim", nil
	}
	c := find(args[0])
	if c == nil {
		return "sim", usageError{fmt.Sprintf("unknown command %q", args[0])}
	}
	return "sim " + c.name, c.run(ctx, env, args[1:])
}

// output is standard output as a command sees it. The first failed write
// (a full disk, a closed pipe) is kept, later writes are not attempted,
// and the command's context is cancelled so that it stops.
type output struct {
	mu     sync.Mutex
	w      io.Writer
	err    error
	cancel context.CancelFunc
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		o.err = err
		o.cancel()
	}
	return n, err
}

func (o *output) failed() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

func find(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, `sim — what a connection costs: DNS, TCP, TLS, keep-alive, workers, TIME_WAIT.

usage: sim <command> [flags] [FILE]

commands:`)
	sorted := commands()
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, `
Run 'sim <command> --help' for its flags and an example.
Labs live in labs/*.md: each `+"```sim"+` block is a scenario with variants and expectations.`)
}

func printCommandHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: sim %s %s\n\n%s\n", c.name, c.usage, c.summary)
	if fs != nil {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	if c.example != "" {
		fmt.Fprintf(w, "\nexample:\n%s\n", c.example)
	}
}

// parse parses flags that may come before or after positional arguments.
func parse(c *command, env *Env, fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printCommandHelp(env.Stdout, c, fs)
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// multiFlag collects a repeated flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// settings parses the --set flags given as key=value.
func (m multiFlag) settings() ([]lab.Setting, error) {
	var out []lab.Setting
	for _, kv := range m {
		st, err := lab.ParseSetting(kv)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// createFile opens path for writing; "-" is standard output.
func createFile(env *Env, path string) (io.WriteCloser, error) {
	if path == "-" {
		return nopCloser{env.Stdout}, nil
	}
	return os.Create(path)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
