package server

import (
	"slices"
	"strings"
)

// Priorities (Policy.Priorities) order WaitForSeat's queue, as RLM's
// PRIORITY does: a waiter of a higher level is served before every waiter
// of a lower one, and waiters of one level first in, first out. They judge
// no acquisition: AcquireSeat, and each try of a waiter, are judged by the
// rules alone.

// The range of a priority's level. Level 0 is a waiter that no priority
// names; a negative level queues its subjects behind them ("the build farm
// waits behind everyone"). The Redis queue keeps a level and a join
// sequence in one exact float64 score (server/waitqueue), which bounds the
// range.
const (
	MinPriorityLevel = -1000
	MaxPriorityLevel = 1000
)

// CheckPriorityLevel refuses a priority level out of range, naming field.
func CheckPriorityLevel(field string, level int) error {
	if level < MinPriorityLevel || level > MaxPriorityLevel {
		return Invalid(field, "must be from %d to %d (got %d)", MinPriorityLevel, MaxPriorityLevel, level)
	}
	return nil
}

// PriorityLevel is the level id waits at for a seat of feature ("": the
// base pool): the highest level of the priorities of that feature whose
// subject names id (a user, a host without case, a member of a group or
// host group as p.Groups has it), 0 when none does (or p is nil). The
// highest wins whatever the order of the entries (RLM takes the first
// matching line instead). Its cost is the priorities of the feature and
// the members of the groups they name: it runs once per wait, not per
// acquisition.
func (p *Policy) PriorityLevel(feature string, id Identity) int {
	if p == nil {
		return 0
	}
	host := strings.ToLower(id.Host)
	level, found := 0, false
	for _, pr := range p.Priorities {
		if pr.Feature != feature || (found && pr.Level <= level) {
			continue
		}
		if p.names(pr.Subject, id.User, host) {
			level, found = pr.Level, true
		}
	}
	return level
}

// names reports whether subject s names the user or the (lower-cased)
// host, its groups taken from p.Groups.
func (p *Policy) names(s Subject, user, host string) bool {
	switch s.Kind {
	case SubjectUser:
		return user != "" && user == s.Name
	case SubjectHost:
		return host != "" && host == strings.ToLower(s.Name)
	case SubjectGroup, SubjectHostGroup:
		i := slices.IndexFunc(p.Groups, func(g Group) bool { return g.Name == s.Name })
		if i < 0 || p.Groups[i].Kind != s.Kind {
			return false
		}
		if s.Kind == SubjectGroup {
			return user != "" && slices.Contains(p.Groups[i].Members, user)
		}
		return host != "" && slices.ContainsFunc(p.Groups[i].Members, func(m string) bool { return strings.ToLower(m) == host })
	}
	return false
}
