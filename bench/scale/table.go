package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// row is one figure of the table: what was measured beside its target.
type row struct {
	figure, measured, target string
	verdict                  string // "met", "NOT met", or "" when there is no target
}

func judged(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// printTable writes the rows as a Markdown table.
func printTable(w io.Writer, title string, rows []row) {
	_, _ = fmt.Fprintf(w, "\n%s\n\n| figure | measured | target | |\n|---|---|---|---|\n", title)
	for _, r := range rows {
		target := r.target
		if target == "" {
			target = "—"
		}
		_, _ = fmt.Fprintf(w, "| %s | %s | %s | %s |\n", r.figure, r.measured, target, r.verdict)
	}
}

// size formats bytes in decimal units (B, kB, MB, GB).
func size(b float64) string {
	switch {
	case b >= 1e9 || b <= -1e9:
		return fmt.Sprintf("%.2f GB", b/1e9)
	case b >= 1e6 || b <= -1e6:
		return fmt.Sprintf("%.1f MB", b/1e6)
	case b >= 1e4 || b <= -1e4:
		return fmt.Sprintf("%.1f kB", b/1e3)
	}
	return fmt.Sprintf("%.0f B", b)
}

// dur formats a duration with three significant figures.
func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1000)
}

// count formats an integer with thousands separators.
func count[T int | int64](n T) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func ms(v float64) string { return fmt.Sprintf("%.2f ms", v) }
