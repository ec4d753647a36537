package chaos

import (
	"fmt"
	"time"
)

// Minimums are what a campaign must have done for its verdict to mean
// anything: a checker that finds no violation in an empty history (no
// grants, no heartbeats, no faults) proves nothing.
type Minimums struct {
	Grants int // acquisitions and waits answered with a lease
	// FeatureGrants are those of them that asked for a feature (and took
	// a seat of a grant): the per-grant limits are judged on them.
	FeatureGrants int
	Heartbeats    int            // heartbeats answered OK
	Releases      int            // releases answered OK
	Faults        map[string]int // injections of each fault kind
	// PolicyRefusals are the refusals of a site policy (reasons) the
	// campaign must have met, each at least once: a policy that never
	// refused proves nothing of the checks of its rules.
	PolicyRefusals []string
}

// MinimumsFor are the minimums of a campaign of duration d that injects
// each of kinds: one grant per 5 s, one grant of a feature per 20 s and
// one heartbeat per second of the run (a healthy campaign of 30 clients on
// 17 base seats and 8 of features makes about 1.5 grants, a third of them
// of features, and 10 heartbeats a second; the margin is for faults and a
// loaded machine), at least one release, and every fault kind at least
// once (the nemesis runs until each has been injected, however short d is).
func MinimumsFor(d time.Duration, kinds []string) Minimums {
	m := Minimums{
		Grants:        max(1, int(d/(5*time.Second))),
		FeatureGrants: max(1, int(d/(20*time.Second))),
		Heartbeats:    max(1, int(d/time.Second)),
		Releases:      1,
		Faults:        map[string]int{},
	}
	for _, k := range kinds {
		m.Faults[k] = 1
	}
	return m
}

// Shortfalls lists what ops and faults (injections by kind) did less of
// than m requires, one line each; none when the campaign did enough.
func (m Minimums) Shortfalls(ops []Op, faults map[string]int) []string {
	var grants, featureGrants, beats, releases int
	refusals := map[string]int{}
	for _, op := range ops {
		if op.Outcome == Failed && (op.Kind == Acquire || op.Kind == Wait) {
			refusals[op.Reason]++
		}
		if op.Outcome != OK {
			continue
		}
		switch op.Kind {
		case Acquire, Wait:
			grants++
			if op.Feature != "" {
				featureGrants++
			}
		case Heartbeat:
			beats++
		case Release:
			releases++
		}
	}
	var out []string
	short := func(what string, got, want int) {
		if got < want {
			out = append(out, fmt.Sprintf("%s: %d, at least %d required", what, got, want))
		}
	}
	short("grants", grants, m.Grants)
	short("grants of a feature", featureGrants, m.FeatureGrants)
	short("heartbeats answered OK", beats, m.Heartbeats)
	short("releases answered OK", releases, m.Releases)
	for _, k := range sortedKeys(m.Faults) {
		short("faults "+k, faults[k], m.Faults[k])
	}
	for _, r := range m.PolicyRefusals {
		short("refusals "+r, refusals[r], 1)
	}
	return out
}
