package main

import (
	"slices"
	"strings"
	"testing"
)

func TestMutateSwapsTheTokenGremlinsNames(t *testing.T) {
	src := []byte("package p\n\nfunc f(a, b int) bool {\n\tx := -a + b\n\tx++\n\treturn a < b && x != 0\n}\n")
	for _, tc := range []struct {
		g    gremlin
		want string
	}{
		{gremlin{"CONDITIONALS_BOUNDARY", "p.go", 6, 11}, "\treturn a <= b && x != 0"},
		{gremlin{"CONDITIONALS_NEGATION", "p.go", 6, 11}, "\treturn a >= b && x != 0"},
		{gremlin{"CONDITIONALS_NEGATION", "p.go", 6, 20}, "\treturn a < b && x == 0"},
		{gremlin{"ARITHMETIC_BASE", "p.go", 4, 10}, "\tx := -a - b"},
		{gremlin{"INVERT_NEGATIVES", "p.go", 4, 7}, "\tx := +a + b"},
		{gremlin{"INCREMENT_DECREMENT", "p.go", 5, 3}, "\tx--"},
	} {
		got, err := mutate(src, tc.g)
		if err != nil {
			t.Fatalf("%v: %v", tc.g, err)
		}
		if !containsLine(string(got), tc.want) {
			t.Errorf("%v: got\n%s\nwant a line %q", tc.g, got, tc.want)
		}
	}
	if _, err := mutate(src, gremlin{"ARITHMETIC_BASE", "p.go", 6, 11}); err == nil {
		t.Error("a mutator that does not swap the token there must fail, not guess")
	}
}

func containsLine(text, line string) bool {
	return slices.Contains(strings.Split(text, "\n"), line)
}

func TestSampleMutatesOnlyTheNamedPackages(t *testing.T) {
	pkgs := []string{"./server/distributed", "./server/distributed/record", "./server/distributed/live"}
	if got := roots(pkgs); !slices.Equal(got, []string{"./server/distributed"}) {
		t.Errorf("roots(%v) = %v, want one dry run, of ./server/distributed", pkgs, got)
	}
	if got := roots([]string{"./server/service", "./server/distributed/live"}); len(got) != 2 {
		t.Errorf("roots of two unrelated packages = %v, want both", got)
	}
	if within("./server/distributedx", "./server/distributed") || !within("./server/distributed/", "server/distributed") {
		t.Error("within compares paths, not prefixes of strings")
	}
	dry := []byte(strings.Join([]string{
		"     RUNNABLE CONDITIONALS_BOUNDARY at acquire.go:12:3",
		"  NOT COVERED CONDITIONALS_NEGATION at acquire.go:14:3",
		"     RUNNABLE ARITHMETIC_BASE at record/sessions.go:40:9",
		"     RUNNABLE INCREMENT_DECREMENT at internal/groupcommit/groupcommit.go:7:2",
	}, "\n"))
	want := map[string]bool{"server/distributed": true, "server/distributed/record": true}
	got := parseDryRun(dry, "./server/distributed", want)
	wantGs := []gremlin{
		{"CONDITIONALS_BOUNDARY", "server/distributed/acquire.go", 12, 3},
		{"ARITHMETIC_BASE", "server/distributed/record/sessions.go", 40, 9},
	}
	if !slices.Equal(got, wantGs) {
		t.Errorf("parseDryRun = %v, want %v (runnable, in a named package, paths from the repository's root)", got, wantGs)
	}
}
