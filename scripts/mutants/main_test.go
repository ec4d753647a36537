package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHandMutantsMatchTheCode keeps the hand-made mutants from rotting
// silently when the code they mutate moves or changes: each mutant's text
// (and its alsoChange's) must occur exactly once in its file, the mutated
// Go file must still parse, and the test packages must exist. It reads the
// files only (no database, no test run), so it runs with go test ./...
func TestHandMutantsMatchTheCode(t *testing.T) {
	root := filepath.Join("..", "..")
	names := map[string]bool{}
	for _, m := range mutants {
		if names[m.name] {
			t.Errorf("two mutants are named %q (-run and alsoChange find a mutant by its name)", m.name)
		}
		names[m.name] = true
		if m.old == m.new {
			t.Errorf("%s: changes nothing", m.name)
		}
		if len(m.pkgs) == 0 {
			t.Errorf("%s: names no tests that must catch it", m.name)
		}
		for _, pkg := range m.pkgs {
			if fi, err := os.Stat(filepath.Join(root, pkg)); err != nil || !fi.IsDir() {
				t.Errorf("%s: its test package %s is not a directory of the repository", m.name, pkg)
			}
		}
		b, err := os.ReadFile(filepath.Join(root, m.file))
		if err != nil {
			t.Errorf("%s: %v", m.name, err)
			continue
		}
		mutated, err := m.apply(string(b))
		if err != nil {
			t.Errorf("%s: %v", m.name, err)
			continue
		}
		if strings.HasSuffix(m.file, ".go") {
			if _, err := parser.ParseFile(token.NewFileSet(), m.file, mutated, parser.SkipObjectResolution); err != nil {
				t.Errorf("%s: the mutated file does not parse: %v", m.name, err)
			}
		}
	}
	for name := range alsoChange {
		if !names[name] {
			t.Errorf("alsoChange names no mutant: %q", name)
		}
	}
	for name := range runOnly {
		if !names[name] {
			t.Errorf("runOnly names no mutant: %q", name)
		}
	}
}

func TestFailedTestsNamesTheTopLevelTests(t *testing.T) {
	out := []byte("--- FAIL: TestRedisLoss (3.1s)\n    --- FAIL: TestRedisLoss/sub (0.1s)\n--- FAIL: TestFinality (1s)\nFAIL\n")
	if got := failedTests(out); got != "TestRedisLoss, TestFinality" {
		t.Errorf("failedTests = %q", got)
	}
}
