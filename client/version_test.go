package client

import "testing"

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1.9", "1.10", -1},
		{"1.10", "1.9", 1},
		{"2024.2", "2024.10", -1},
		{"3", "3.0", 0},
		{"3.0.0", "3", 0},
		{"3.0.1", "3", 1},
		{"2025", "2025", 0},
		{"02", "2", 0},
		{"10", "9.99", 1},
		{"99999999999999999999", "1", 1}, // past uint64 still compares
		{"1", "99999999999999999999", -1},
	} {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
