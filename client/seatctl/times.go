package seatctl

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseInstant reads RFC 3339 ("2026-05-01T12:00:00Z") or a UTC date
// ("2026-05-01").
func parseInstant(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time or a YYYY-MM-DD date", s)
}

// parseSince reads an age ("30d", "12h", "90m", "1d12h": that long before
// now) or an instant (parseInstant).
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := parseAge(s); err == nil {
		return now.Add(-d), nil
	}
	t, err := parseInstant(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an age (30d, 12h, 90m) nor an RFC 3339 time or YYYY-MM-DD date", s)
	}
	return t, nil
}

// parseAge is time.ParseDuration with a "d" (24h) unit in front.
func parseAge(s string) (time.Duration, error) {
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad days in %q", s)
		}
		days = time.Duration(n) * 24 * time.Hour
		s = s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad age %q", s)
	}
	return days + d, nil
}
