package seatctl

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"sigs.k8s.io/yaml"
)

// jsonOpts print every field, set or not, so scripts find each key.
var jsonOpts = protojson.MarshalOptions{Multiline: true, Indent: "  ", EmitUnpopulated: true}

// emit prints m as JSON or YAML when -o says so and reports whether it did;
// a table is left to the caller.
func (g *globals) emit(m proto.Message) (bool, error) {
	if g.output == "table" {
		return false, nil
	}
	data, err := jsonOpts.Marshal(m)
	if err != nil {
		return true, err
	}
	return true, g.write(data)
}

// emitJSON is emit for a value that is not one message (plain encoding/json).
func (g *globals) emitJSON(v any) (bool, error) {
	if g.output == "table" {
		return false, nil
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return true, err
	}
	return true, g.write(data)
}

func (g *globals) write(jsonData []byte) error {
	if g.output == "yaml" {
		y, err := yaml.JSONToYAML(jsonData)
		if err != nil {
			return err
		}
		_, err = g.stdout.Write(y)
		return err
	}
	_, err := fmt.Fprintf(g.stdout, "%s\n", jsonData)
	return err
}

// table writes aligned columns.
type table struct{ w *tabwriter.Writer }

func newTable(out io.Writer, header ...string) *table {
	t := &table{w: tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, c)
		if cells[i] == "" {
			cells[i] = "-"
		}
	}
	fmt.Fprintln(t.w, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.w.Flush() }

// Formatting of cells. Times are local, to the second.

func fmtTime(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	return ts.AsTime().Local().Format("2006-01-02 15:04:05")
}

func fmtDuration(d *durationpb.Duration) string {
	if d == nil {
		return ""
	}
	return shortDuration(d.AsDuration())
}

// shortDuration is d without zero parts: 6m, 1h30m, 1.5s, 2d3h.
func shortDuration(d time.Duration) string {
	if d < 0 {
		return "-" + shortDuration(-d)
	}
	if d < time.Millisecond {
		return d.String()
	}
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	if d < time.Minute && d%time.Second != 0 {
		return d.Round(10 * time.Millisecond).String()
	}
	d = d.Round(time.Second)
	var b strings.Builder
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.d
		}
	}
	return b.String()
}

// fmtUntil says how far ts is from now: "in 5m10s", "3s ago".
func fmtUntil(ts *timestamppb.Timestamp, now time.Time) string {
	if ts == nil {
		return ""
	}
	d := ts.AsTime().Sub(now).Round(time.Second)
	if d >= 0 {
		return "in " + shortDuration(d)
	}
	return shortDuration(-d) + " ago"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
