package daemon

import "flag"

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
