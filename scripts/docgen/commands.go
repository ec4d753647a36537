package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/seatd/seatd/client/seatctl"
	"github.com/seatd/seatd/server/daemon"
)

// seatdFlag is one flag of a Go flag.FlagSet's PrintDefaults.
type seatdFlag struct {
	name, kind, usage, def string
}

var defaultRE = regexp.MustCompile(`\s*\(default (.*)\)$`)

// parseFlagDefaults reads PrintDefaults' lines ("  -name type" then
// "    \tusage" lines) after the "Flags:" line, or from the first flag.
func parseFlagDefaults(text string) []seatdFlag {
	var flags []seatdFlag
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "  -"):
			f := strings.Fields(strings.TrimPrefix(line, "  -"))
			sf := seatdFlag{name: f[0]}
			if len(f) > 1 {
				sf.kind = f[1]
			} else {
				sf.kind = "bool"
			}
			flags = append(flags, sf)
		case strings.HasPrefix(line, "    \t") && len(flags) > 0:
			last := &flags[len(flags)-1]
			if last.usage != "" {
				last.usage += " "
			}
			last.usage += strings.TrimSpace(line)
		}
	}
	for i := range flags {
		if m := defaultRE.FindStringSubmatch(flags[i].usage); m != nil {
			flags[i].def = m[1]
			flags[i].usage = strings.TrimSpace(defaultRE.ReplaceAllString(flags[i].usage, ""))
		}
	}
	return flags
}

func seatdHelp(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	code := daemon.Main(context.Background(), args, &out, &errOut)
	text := out.String() + errOut.String()
	if code != 0 && !strings.Contains(text, "Usage") {
		return "", fmt.Errorf("seatd %s: exit %d: %s", strings.Join(args, " "), code, text)
	}
	return text, nil
}

// seatdFlags is every flag of `seatd --help`.
func seatdFlags() (string, []seatdFlag, error) {
	help, err := seatdHelp("--help")
	if err != nil {
		return "", nil, err
	}
	head, rest, ok := strings.Cut(help, "Flags:\n")
	if !ok {
		return "", nil, fmt.Errorf("seatd --help: no \"Flags:\" line")
	}
	return head, parseFlagDefaults(rest), nil
}

func (g *generator) seatdReference() error {
	head, flags, err := seatdFlags()
	if err != nil {
		return err
	}
	b := header("seatd: commands, flags and environment", "`seatd --help` and each command's `-h`")
	b.WriteString("```\n" + strings.TrimSpace(head) + "\n```\n\n")
	b.WriteString("## Server flags\n\n")
	b.WriteString("Every flag can be set by its environment variable; a flag on the command line wins. " +
		"Durations are Go durations (`90s`, `10m`, `8784h`). What each one does in more words: " +
		"[configuration](../operations/configuration.md).\n\n")
	b.WriteString("| flag | environment | type | default | description |\n|---|---|---|---|---|\n")
	host, _ := os.Hostname()
	for _, f := range flags {
		if host != "" && strings.Contains(f.def, host) {
			f.def = "<hostname>-<pid>" // the machine's: not the same where the docs are built
		}
		def := "—"
		if f.def != "" {
			def = "`" + strings.ReplaceAll(f.def, "|", `\|`) + "`"
		}
		fmt.Fprintf(b, "| `--%s` | `%s` | %s | %s | %s |\n", f.name, daemon.EnvName(f.name), f.kind, def, cell(f.usage))
	}
	for _, cmd := range []string{"migrate", "backup", "restore"} {
		help, err := seatdHelp(cmd, "-h")
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "\n## seatd %s\n\n```\n%s\n```\n", cmd, strings.TrimRight(help, "\n"))
	}
	b.WriteString("\n## seatd version\n\n`seatd version` (or `seatd --version`) prints the version, the git revision and the Go version.\n")
	g.files["docs/reference/seatd.md"] = b.Bytes()
	return g.checkConfigurationPage(flags)
}

var configFlagRE = regexp.MustCompile("`--([a-z0-9-]+)`")

// checkConfigurationPage: the hand-written configuration table names every
// flag seatd has, and no flag it does not have.
func (g *generator) checkConfigurationPage(flags []seatdFlag) error {
	const page = "docs/operations/configuration.md"
	text, err := g.read(page)
	if err != nil {
		return err
	}
	named := map[string]bool{}
	for _, line := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range configFlagRE.FindAllStringSubmatch(first, -1) {
			named[m[1]] = true
		}
	}
	have := map[string]bool{}
	var missing []string
	for _, f := range flags {
		have[f.name] = true
		if !named[f.name] {
			missing = append(missing, "--"+f.name)
		}
	}
	var unknown []string
	for n := range named {
		if !have[n] {
			unknown = append(unknown, "--"+n)
		}
	}
	if len(missing)+len(unknown) > 0 {
		return fmt.Errorf("%s: its flag table lacks %v and names flags seatd does not have: %v", page, missing, unknown)
	}
	return nil
}

func seatctlHelp(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	code := seatctl.Main(append(args, "--help"), &out, &errOut)
	if code != 0 {
		return "", fmt.Errorf("seatctl %s --help: exit %d: %s", strings.Join(args, " "), code, errOut.String())
	}
	return out.String(), nil
}

// subcommands are the names under "Available Commands:" in a cobra help.
func subcommands(help string) []string {
	_, rest, ok := strings.Cut(help, "Available Commands:\n")
	if !ok {
		return nil
	}
	var names []string
	for _, line := range strings.Split(rest, "\n") {
		if strings.TrimSpace(line) == "" {
			break
		}
		if name := strings.Fields(line)[0]; name != "help" {
			names = append(names, name)
		}
	}
	return names
}

func (g *generator) seatctlReference() error {
	b := header("seatctl: every command", "each command's `seatctl --help`")
	b.WriteString("How to use it, with examples and its exit codes: [seatctl](../guides/seatctl.md).\n")
	var walk func(path []string) error
	walk = func(path []string) error {
		help, err := seatctlHelp(path...)
		if err != nil {
			return err
		}
		title := strings.Join(append([]string{"seatctl"}, path...), " ")
		level := "##"
		if len(path) > 1 {
			level = "###"
		}
		fmt.Fprintf(b, "\n%s %s\n\n```\n%s\n```\n", level, title, strings.TrimRight(help, "\n"))
		for _, sub := range subcommands(help) {
			if err := walk(append(append([]string{}, path...), sub)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(nil); err != nil {
		return err
	}
	g.files["docs/reference/seatctl.md"] = b.Bytes()
	return nil
}
