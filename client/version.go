package client

import (
	"cmp"
	"strings"
)

// compareVersions compares two dotted versions component by component as
// numbers of any length, a missing component being 0 (1.9 < 1.10, 3 = 3.0):
// -1, 0 or +1. It is seatd's own rule (the server's CompareVersions), kept
// here so that the client does not import the server.
func compareVersions(a, b string) int {
	for a != "" || b != "" {
		var x, y string
		x, a, _ = strings.Cut(a, ".")
		y, b, _ = strings.Cut(b, ".")
		if c := compareNumbers(x, y); c != 0 {
			return c
		}
	}
	return 0
}

// compareNumbers compares two strings of decimal digits as numbers ("" is 0).
func compareNumbers(x, y string) int {
	x, y = strings.TrimLeft(x, "0"), strings.TrimLeft(y, "0")
	if c := cmp.Compare(len(x), len(y)); c != 0 {
		return c
	}
	return strings.Compare(x, y)
}

// versionCovered reports whether a grant of version grant ("": every
// version) covers a request for version asked ("": any version).
func versionCovered(asked, grant string) bool {
	return asked == "" || grant == "" || compareVersions(asked, grant) <= 0
}
