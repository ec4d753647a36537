package daemon

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// command is one of seatd's subcommands (migrate, backup, restore): its
// flags and how it answers -h and mistakes, alike for all of them.
type command struct {
	name   string // messages start "seatd <name>: "
	flags  *flag.FlagSet
	stdout io.Writer
	stderr io.Writer
}

func newCommand(name string, stdout, stderr io.Writer) *command {
	fs := flag.NewFlagSet("seatd "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &command{name: name, flags: fs, stdout: stdout, stderr: stderr}
}

// parse parses flags that may come before or after the positional
// arguments and returns the positional ones. When the command is done
// already, ok is false and code is its exit code: -h printed usage and the
// flags (0), or a flag was wrong (2).
func (c *command) parse(args []string, usage string) (positional []string, code int, ok bool) {
	positional, err := parseInterleaved(c.flags, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(c.stdout, usage)
		c.flags.SetOutput(c.stdout)
		c.flags.PrintDefaults()
		return nil, 0, false
	}
	if err != nil {
		return nil, c.badFlags(err), false
	}
	return positional, 0, true
}

// badFlags reports a flag error and returns exit code 2.
func (c *command) badFlags(err error) int {
	return c.fail(2, "%v (see seatd %s -h)", err, c.name)
}

// fail writes "seatd <name>: <message>" on stderr and returns code.
func (c *command) fail(code int, format string, args ...any) int {
	fmt.Fprintf(c.stderr, "seatd "+c.name+": "+format+"\n", args...)
	return code
}

// parseInterleaved parses flags that may come before or after the
// positional arguments (`seatd restore FILE --data-dir DIR`), which the
// flag package alone stops at, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// flagDefault is seatd's default for one of its server flags, so that the
// subcommands find the server where it listens by default.
func flagDefault(name string) string {
	var c Config
	return c.flagSet().Lookup(name).DefValue
}
