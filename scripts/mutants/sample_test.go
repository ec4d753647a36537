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
