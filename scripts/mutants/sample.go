package main

// Sampling: a package whose tests take a minute (server/distributed runs
// real PostgreSQL and Redis) has too many gremlins mutants to run them all
// before every release (~10 h on a 2-core VM). -sample N runs a seeded
// random sample of them instead, applying each mutation exactly as gremlins
// would, and prints the efficacy with its 95 % interval.
//
// -pkg may name several packages, and -tests the packages whose tests must
// catch their mutants besides each mutated file's own package: the record
// (server/distributed/record) and the live state (server/distributed/live)
// are guarded mostly by the tests of server/distributed, which exercise
// them through the Store. A mutant is sampled only if those tests run its
// line: gremlins' dry run measures coverage over the -pkg packages
// (-coverpkg) with the tests under them, so every -tests package must be
// one of the -pkg packages or below one.

import (
	"bufio"
	"bytes"
	"fmt"
	"go/scanner"
	"go/token"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// gremlin is one mutant from gremlins' dry run: a token to swap.
type gremlin struct {
	kind      string // gremlins' mutator name
	file      string // relative to the repository's root
	line, col int
}

var runnable = regexp.MustCompile(`RUNNABLE\s+(\S+)\s+at\s+(\S+):(\d+):(\d+)`)

// listGremlins runs gremlins' dry run in the work tree and returns the
// mutants of the files of pkgs (not of the packages below them), with
// coverage measured over pkgs when crossTests (other packages' tests guard
// them). One dry run per package that is not below another one of pkgs
// (gremlins walks the tree under the package it is given).
func listGremlins(work string, pkgs []string, crossTests bool) []gremlin {
	want := map[string]bool{}
	for _, p := range pkgs {
		want[filepath.Clean(p)] = true
	}
	var gs []gremlin
	for _, root := range roots(pkgs) {
		args := []string{"tool", "-modfile=tools/mutate/go.mod", "gremlins", "unleash", "--dry-run"}
		if crossTests {
			args = append(args, "--coverpkg", strings.Join(pkgs, ","))
		}
		cmd := exec.Command("go", append(args, root)...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err != nil {
			check(fmt.Errorf("gremlins dry run of %s: %v\n%s", root, err, out))
		}
		gs = append(gs, parseDryRun(out, root, want)...)
	}
	return gs
}

// parseDryRun reads the RUNNABLE mutants of gremlins' dry run of root
// (their files are relative to root) that are in a package of want.
func parseDryRun(out []byte, root string, want map[string]bool) []gremlin {
	var gs []gremlin
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := runnable.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		file := filepath.Join(filepath.Clean(root), m[2])
		if !want[filepath.Dir(file)] {
			continue
		}
		line, _ := strconv.Atoi(m[3])
		col, _ := strconv.Atoi(m[4])
		gs = append(gs, gremlin{kind: m[1], file: file, line: line, col: col})
	}
	return gs
}

// roots are the packages of pkgs that are not below another one of them.
func roots(pkgs []string) []string {
	var out []string
	for _, p := range pkgs {
		below := false
		for _, q := range pkgs {
			if q != p && within(p, q) {
				below = true
			}
		}
		if !below && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// within tells whether directory p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(p))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// splitList splits a comma-separated flag value.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// swaps is what each gremlins mutator turns a token into.
var swaps = map[string]map[token.Token]token.Token{
	"CONDITIONALS_BOUNDARY": {token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR},
	"CONDITIONALS_NEGATION": {token.EQL: token.NEQ, token.NEQ: token.EQL, token.LSS: token.GEQ, token.LEQ: token.GTR, token.GTR: token.LEQ, token.GEQ: token.LSS},
	"ARITHMETIC_BASE":       {token.ADD: token.SUB, token.SUB: token.ADD, token.MUL: token.QUO, token.QUO: token.MUL, token.REM: token.MUL},
	"INCREMENT_DECREMENT":   {token.INC: token.DEC, token.DEC: token.INC},
	"INVERT_NEGATIVES":      {token.SUB: token.ADD},
}

// mutate swaps the token at g's position in src.
func mutate(src []byte, g gremlin) ([]byte, error) {
	fset := token.NewFileSet()
	f := fset.AddFile(g.file, -1, len(src))
	var s scanner.Scanner
	s.Init(f, src, nil, 0)
	for {
		pos, tok, _ := s.Scan()
		if tok == token.EOF {
			return nil, fmt.Errorf("no token at %s:%d:%d", g.file, g.line, g.col)
		}
		p := fset.Position(pos)
		if p.Line != g.line || p.Column != g.col {
			continue
		}
		to, ok := swaps[g.kind][tok]
		if !ok {
			return nil, fmt.Errorf("%s at %s:%d:%d is %q, not a token it swaps", g.kind, g.file, g.line, g.col, tok)
		}
		off := p.Offset
		return concat(src[:off], []byte(to.String()), src[off+len(tok.String()):]), nil
	}
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// sample runs n (all if n < 0) of the gremlins mutants of pkgs, chosen
// with seed, each against its own package's tests and those of tests.
func sample(work string, pkgs, tests []string, n int, seed uint64) {
	for _, t := range tests {
		if !slices.ContainsFunc(pkgs, func(p string) bool { return within(strings.TrimSuffix(t, "/..."), p) }) {
			check(fmt.Errorf("-tests %s: not one of -pkg's packages or below one (the dry run would not measure its coverage)", t))
		}
	}
	all := listGremlins(work, pkgs, len(tests) > 0)
	rng := rand.New(rand.NewPCG(seed, seed))
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	if n < 0 || n > len(all) {
		n = len(all)
	}
	what := strings.Join(pkgs, " ")
	fmt.Printf("%s: %d runnable mutants, sampling %d (seed %d)", what, len(all), n, seed)
	if len(tests) > 0 {
		fmt.Printf(", tested also by %s", strings.Join(tests, " "))
	}
	fmt.Println()
	killed, lived, timedOut, broken := 0, 0, 0, 0
	var survivors []string
	for _, g := range all[:n] {
		path := filepath.Join(work, g.file)
		orig, err := os.ReadFile(path)
		check(err)
		mutated, err := mutate(orig, g)
		check(err)
		check(os.WriteFile(path, mutated, 0o644))
		start := time.Now()
		args := []string{"test", "-count=1", "-timeout", "10m", "./" + filepath.Dir(g.file) + "/"}
		for _, t := range tests {
			if filepath.Clean(t) != filepath.Dir(g.file) {
				args = append(args, t)
			}
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		check(os.WriteFile(path, orig, 0o644))
		name := fmt.Sprintf("%s at %s:%d:%d", g.kind, g.file, g.line, g.col)
		took := time.Since(start).Round(time.Second)
		switch {
		case err == nil:
			lived++
			survivors = append(survivors, name)
			fmt.Printf("LIVED     %s (%v)\n", name, took)
		case buildFailed(out):
			// gremlins calls these NOT VIABLE: neither killed nor lived.
			broken++
			fmt.Printf("NOT VIABLE %s (does not build)\n", name)
		case strings.Contains(string(out), "panic: test timed out"):
			timedOut++
			fmt.Printf("TIMED OUT %s (%v)\n", name, took)
		default:
			killed++
			fmt.Printf("KILLED    %s (%v)\n", name, took)
		}
	}
	lo, hi := wilson(killed, killed+lived)
	fmt.Printf("\n%s sample: %d killed, %d lived, %d timed out, %d not viable (counted apart)\n", what, killed, lived, timedOut, broken)
	fmt.Printf("estimated efficacy %.1f %% (95 %% interval %.1f–%.1f %%)\n", 100*float64(killed)/float64(max(1, killed+lived)), 100*lo, 100*hi)
	for _, s := range survivors {
		fmt.Println("  lived:", s)
	}
}

// wilson is the 95 % Wilson score interval of k successes in n trials.
func wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.96
	p, fn := float64(k)/float64(n), float64(n)
	mid := (p + z*z/(2*fn)) / (1 + z*z/fn)
	half := z / (1 + z*z/fn) * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn))
	return mid - half, mid + half
}
