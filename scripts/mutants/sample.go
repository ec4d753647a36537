package main

// Sampling: a package whose tests take a minute (server/distributed runs
// real PostgreSQL and Redis) has too many gremlins mutants to run them all
// before every release (~580, ~10 h on a 2-core VM). -sample N runs a
// seeded random sample of them instead, applying each mutation exactly as
// gremlins would, and prints the efficacy with its 95 % interval.

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
	"strconv"
	"strings"
	"time"
)

// gremlin is one mutant from gremlins' dry run: a token to swap.
type gremlin struct {
	kind      string // gremlins' mutator name
	file      string // relative to the package
	line, col int
}

var runnable = regexp.MustCompile(`RUNNABLE\s+(\S+)\s+at\s+(\S+):(\d+):(\d+)`)

// listGremlins runs gremlins' dry run over pkg in the work tree.
func listGremlins(work, pkg string) []gremlin {
	cmd := exec.Command("go", "tool", "-modfile=tools/mutate/go.mod", "gremlins", "unleash", "--dry-run", pkg)
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if err != nil {
		check(fmt.Errorf("gremlins dry run: %v\n%s", err, out))
	}
	var gs []gremlin
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := runnable.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[3])
		col, _ := strconv.Atoi(m[4])
		gs = append(gs, gremlin{kind: m[1], file: m[2], line: line, col: col})
	}
	return gs
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

// sample runs n of pkg's gremlins mutants, chosen with seed.
func sample(work, pkg string, n int, seed uint64) {
	all := listGremlins(work, pkg)
	rng := rand.New(rand.NewPCG(seed, seed))
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	if n > len(all) {
		n = len(all)
	}
	fmt.Printf("%s: %d runnable mutants, sampling %d (seed %d)\n", pkg, len(all), n, seed)
	killed, lived, timedOut := 0, 0, 0
	var survivors []string
	for _, g := range all[:n] {
		path := filepath.Join(work, pkg, g.file)
		orig, err := os.ReadFile(path)
		check(err)
		mutated, err := mutate(orig, g)
		check(err)
		check(os.WriteFile(path, mutated, 0o644))
		start := time.Now()
		cmd := exec.Command("go", "test", "-count=1", "-timeout", "10m", pkg)
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
		case strings.Contains(string(out), "panic: test timed out"):
			timedOut++
			fmt.Printf("TIMED OUT %s (%v)\n", name, took)
		default:
			killed++
			fmt.Printf("KILLED    %s (%v)\n", name, took)
		}
	}
	lo, hi := wilson(killed, killed+lived)
	fmt.Printf("\n%s sample: %d killed, %d lived, %d timed out (counted apart)\n", pkg, killed, lived, timedOut)
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
