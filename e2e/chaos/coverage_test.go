package chaos

import (
	"testing"
	"time"
)

// TestShortfallsOfAnEmptyHistory: a campaign that did nothing has no
// violation, and its verdict must still fail: every minimum is named.
func TestShortfallsOfAnEmptyHistory(t *testing.T) {
	m := MinimumsFor(time.Minute, []string{"kill-9", "sigterm"})
	if len(Check(nil, map[string]int{"L": 1}, nil, Params{Final: true})) != 0 {
		t.Fatal("an empty history has violations")
	}
	got := m.Shortfalls(nil, nil)
	want := []string{
		"grants: 0, at least 12 required",
		"grants of a feature: 0, at least 3 required",
		"heartbeats answered OK: 0, at least 60 required",
		"releases answered OK: 0, at least 1 required",
		"faults kill-9: 0, at least 1 required",
		"faults sigterm: 0, at least 1 required",
	}
	if len(got) != len(want) {
		t.Fatalf("shortfalls %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("shortfalls %q, want %q", got, want)
		}
	}
}

// TestShortfallsCountOnlyWhatSucceeded: failed and unknown answers do not
// count, and a campaign that did enough has no shortfall.
func TestShortfallsCountOnlyWhatSucceeded(t *testing.T) {
	m := MinimumsFor(10*time.Second, []string{"kill-9"}) // 2 grants (1 of a feature), 10 heartbeats, 1 release
	ops := []Op{
		featureGrant(1, "a", "L.g1", "render", "2024", 0, 10, 1000),
		{Kind: Wait, License: "L", Lease: "b", Start: at(0), End: at(10), Outcome: OK},
		{Kind: Acquire, License: "L", Start: at(0), End: at(10), Outcome: Unknown},
		release("a", 20, 30, OK, ""),
	}
	for i := range 10 {
		ops = append(ops, beat("a", 11+i, 12+i, OK, "", 2000))
	}
	ops = append(ops, beat("a", 40, 41, Failed, ReasonReleased, 0))
	if s := m.Shortfalls(ops, map[string]int{"kill-9": 1}); len(s) != 0 {
		t.Fatalf("shortfalls %q of a campaign that did enough", s)
	}
	if s := m.Shortfalls(ops[:len(ops)-2], map[string]int{"kill-9": 1}); len(s) != 1 || s[0] != "heartbeats answered OK: 9, at least 10 required" {
		t.Fatalf("shortfalls %q, want one heartbeat short (the failed one does not count)", s)
	}
	if s := m.Shortfalls(ops, map[string]int{}); len(s) != 1 || s[0] != "faults kill-9: 0, at least 1 required" {
		t.Fatalf("shortfalls %q, want the missing fault", s)
	}
	ops[0].Feature, ops[0].Grant = "", ""
	if s := m.Shortfalls(ops, map[string]int{"kill-9": 1}); len(s) != 1 || s[0] != "grants of a feature: 0, at least 1 required" {
		t.Fatalf("shortfalls %q, want the missing grant of a feature", s)
	}
}

// TestShortfallsOfPolicyRefusals: each policy refusal asked for must have
// been answered once, to an acquisition or a wait.
func TestShortfallsOfPolicyRefusals(t *testing.T) {
	m := Minimums{PolicyRefusals: []string{ReasonExcluded, ReasonUserLimit}}
	ops := []Op{
		{Kind: Wait, License: "L", Start: at(0), End: at(10), Outcome: Failed, Reason: ReasonExcluded},
		{Kind: Acquire, License: "L", Start: at(0), End: at(10), Outcome: Unknown, Reason: ReasonUserLimit},
		{Kind: Heartbeat, License: "L", Start: at(0), End: at(10), Outcome: Failed, Reason: ReasonUserLimit},
	}
	if s := m.Shortfalls(ops, nil); len(s) != 1 || s[0] != "refusals USER_LIMIT: 0, at least 1 required" {
		t.Fatalf("shortfalls %q, want USER_LIMIT missing", s)
	}
	ops[1].Outcome = Failed
	if s := m.Shortfalls(ops, nil); len(s) != 0 {
		t.Fatalf("shortfalls %q of a campaign that met both", s)
	}
}
