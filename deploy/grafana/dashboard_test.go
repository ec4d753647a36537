// Package grafana holds seatd's Grafana dashboard (seatd.json); this test
// parses every PromQL expression in it with Prometheus's own parser and
// checks each metric and label it names against what seatd exports.
package grafana

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"sigs.k8s.io/yaml"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/metrics"
)

// family is one exported metric family: its type and label names.
type family struct {
	typ    string // COUNTER, GAUGE, HISTOGRAM, SUMMARY, UNTYPED
	labels map[string]bool
}

// recorder is a registry that keeps what is registered, so that every
// collector can be described (a vector with no series yet is not
// gathered, but it is described).
type recorder struct {
	*prometheus.Registry
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registry.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

type noBackground struct{}

func (noBackground) BackgroundStats() server.BackgroundStats { return server.BackgroundStats{} }

var (
	descName   = regexp.MustCompile(`fqName: "([^"]+)"`)
	descLabels = regexp.MustCompile(`constLabels: \{(.*)\}, variableLabels: \{([^}]*)\}\}$`)
	constName  = regexp.MustCompile(`(\w+)="`)
)

// exported is what seatd's /metrics can hold: the collectors registered
// as server/daemon (daemon.go, New) registers them: the Go and process
// collectors, metrics.New and metrics.NewNetwork, the build info, a
// store's background counts, the TLS certificate's expiry, the suppressed
// log lines and the gRPC server metrics with the handling-time histogram.
func exported(t *testing.T) map[string]family {
	t.Helper()
	reg := &recorder{Registry: prometheus.NewRegistry()}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics.New(reg)
	metrics.NewNetwork(reg)
	metrics.RegisterBuildInfo(reg, "v0", "rev", "go")
	metrics.RegisterBackground(reg, noBackground{})
	metrics.RegisterTLSExpiry(reg, time.Now)
	metrics.RegisterLogSuppressed(reg, func() int64 { return 0 })
	rpc := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram())
	reg.MustRegister(rpc)
	srv := grpc.NewServer()
	seatdv1.RegisterSeatServiceServer(srv, seatdv1.UnimplementedSeatServiceServer{})
	seatdv1.RegisterHeartbeatServiceServer(srv, seatdv1.UnimplementedHeartbeatServiceServer{})
	seatdv1.RegisterAdminServiceServer(srv, seatdv1.UnimplementedAdminServiceServer{})
	rpc.InitializeMetrics(srv) // a series per method: the histogram is gathered

	out := map[string]family{}
	for _, c := range reg.collectors {
		ch := make(chan *prometheus.Desc, 64)
		go func() {
			c.Describe(ch)
			close(ch)
		}()
		for d := range ch {
			s := d.String()
			name := descName.FindStringSubmatch(s)
			require.NotNil(t, name, "a metric description without a name: %s", s)
			f := family{typ: "UNTYPED", labels: map[string]bool{}}
			if m := descLabels.FindStringSubmatch(s); m != nil {
				for _, l := range constName.FindAllStringSubmatch(m[1], -1) {
					f.labels[l[1]] = true
				}
				for _, l := range strings.Split(m[2], ",") {
					if l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"); l != "" {
						f.labels[l] = true
					}
				}
			}
			out[name[1]] = f
		}
	}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		f, ok := out[mf.GetName()]
		require.True(t, ok, "%s is gathered but was not described", mf.GetName())
		f.typ = mf.GetType().String()
		out[mf.GetName()] = f
	}
	for _, name := range []string{"seatd_active_seats", "seatd_cleanup_duration_seconds", "seatd_redis_writes_behind", "grpc_server_handling_seconds"} {
		require.Contains(t, out, name, "the exported set is incomplete")
	}
	require.Equal(t, "HISTOGRAM", out["grpc_server_handling_seconds"].typ)
	return out
}

// series resolves a series name to its family: a histogram's _bucket,
// _sum and _count, a summary's _sum and _count. extra are the labels the
// suffix adds (le, quantile).
func series(families map[string]family, name string) (family, []string, bool) {
	if f, ok := families[name]; ok {
		if f.typ == "SUMMARY" {
			return f, []string{"quantile"}, true
		}
		return f, nil, f.typ != "HISTOGRAM"
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		f, ok := families[strings.TrimSuffix(name, suffix)]
		if !ok || !strings.HasSuffix(name, suffix) {
			continue
		}
		switch {
		case f.typ == "HISTOGRAM" && suffix == "_bucket":
			return f, []string{"le"}, true
		case (f.typ == "HISTOGRAM" || f.typ == "SUMMARY") && suffix != "_bucket":
			return f, nil, true
		}
	}
	return family{}, nil, false
}

// scrapeLabels are added by Prometheus to every series it scrapes.
var scrapeLabels = []string{"job", "instance"}

// grafanaVar is a dashboard variable in an expression: $job, ${job},
// ${job:regex}, $__rate_interval.
var grafanaVar = regexp.MustCompile(`\$\{?(\w+)(?::\w+)?\}?`)

// promql parses a dashboard expression with its Grafana variables
// replaced: interval variables by a duration, others by a label value.
func promql(expr string) (parser.Expr, error) {
	expr = grafanaVar.ReplaceAllStringFunc(expr, func(v string) string {
		if name := grafanaVar.FindStringSubmatch(v)[1]; strings.HasPrefix(name, "__") {
			return "5m"
		}
		return "value"
	})
	return parser.NewParser(parser.Options{}).ParseExpr(expr)
}

// checkNames fails for each series, label matcher or grouping label of
// expr that seatd does not export.
func checkNames(families map[string]family, expr parser.Expr) []string {
	var problems []string
	labelsOf := func(vs *parser.VectorSelector) ([]string, bool) {
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" {
				name = m.Value
			}
		}
		f, extra, ok := series(families, name)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: seatd exports no such metric", name))
			return nil, false
		}
		var names []string
		for l := range f.labels {
			names = append(names, l)
		}
		return append(append(names, extra...), scrapeLabels...), true
	}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			have, ok := labelsOf(n)
			if !ok {
				return nil
			}
			for _, m := range n.LabelMatchers {
				if m.Name != "__name__" && !slices.Contains(have, m.Name) {
					problems = append(problems, fmt.Sprintf("%s: no label %q (it has %v)", n.Name, m.Name, have))
				}
			}
		case *parser.AggregateExpr:
			// Grouping labels must be labels of the series aggregated.
			var below []string
			parser.Inspect(n.Expr, func(inner parser.Node, _ []parser.Node) error {
				if vs, ok := inner.(*parser.VectorSelector); ok {
					l, _ := labelsOf(vs)
					below = append(below, l...)
				}
				return nil
			})
			for _, g := range n.Grouping {
				if len(below) > 0 && !slices.Contains(below, g) {
					problems = append(problems, fmt.Sprintf("%s by (%s): no series below has that label", n.Op, g))
				}
			}
		}
		return nil
	})
	return problems
}

type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Datasource  *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Thresholds *struct {
				Steps []struct {
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
			Custom struct {
				ThresholdsStyle struct {
					Mode string `json:"mode"`
				} `json:"thresholdsStyle"`
			} `json:"custom"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func load(t *testing.T) (dashboard, []panel) {
	t.Helper()
	data, err := os.ReadFile("seatd.json")
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(data, &d))
	var all []panel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	return d, all
}

// TestEveryExpressionNamesExportedMetrics: each panel's PromQL parses, and
// every metric, label matcher and grouping label in it is one seatd
// exports; so is the job variable's query.
func TestEveryExpressionNamesExportedMetrics(t *testing.T) {
	t.Parallel()
	families := exported(t)
	d, panels := load(t)
	exprs := 0
	for _, p := range panels {
		for _, target := range p.Targets {
			expr, err := promql(target.Expr)
			require.NoError(t, err, "panel %q, query %s: %s", p.Title, target.RefID, target.Expr)
			require.Empty(t, checkNames(families, expr), "panel %q, query %s: %s", p.Title, target.RefID, target.Expr)
			exprs++
		}
	}
	require.Greater(t, exprs, 10)

	labelValues := regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		require.NoError(t, json.Unmarshal(v.Query, &q), "variable %s", v.Name)
		m := labelValues.FindStringSubmatch(q.Query)
		require.NotNil(t, m, "variable %s: %s", v.Name, q.Query)
		expr, err := promql(m[1])
		require.NoError(t, err, "variable %s", v.Name)
		require.Empty(t, checkNames(families, expr), "variable %s", v.Name)
		vs, ok := expr.(*parser.VectorSelector)
		require.True(t, ok, "variable %s: label_values of a series", v.Name)
		_, _, found := series(families, vs.Name)
		require.True(t, found, "variable %s", v.Name)
		require.Contains(t, append(slices.Collect(func(yield func(string) bool) {
			for l := range families[vs.Name].labels {
				if !yield(l) {
					return
				}
			}
		}), scrapeLabels...), m[2], "variable %s: label %s", v.Name, m[2])
	}
}

// TestTheCheckCatchesWhatItShould: the name check is not vacuous.
func TestTheCheckCatchesWhatItShould(t *testing.T) {
	t.Parallel()
	families := exported(t)
	for expr, want := range map[string]string{
		`rate(seatd_zombies_cleand_total[5m])`:                                 "no such metric",
		`seatd_leader{role="x"}`:                                               `no label "role"`,
		`sum by (grpc_methd) (rate(grpc_server_handled_total[5m]))`:            "by (grpc_methd)",
		`histogram_quantile(0.9, rate(seatd_active_seats_bucket[5m]))`:         "no such metric",
		`rate(seatd_cleanup_duration_seconds[5m])`:                             "no such metric", // a histogram has no plain series
		`sum by (le) (rate(grpc_server_handling_seconds_bucket{job="x"}[1m]))`: "",
	} {
		e, err := promql(expr)
		require.NoError(t, err, expr)
		problems := strings.Join(checkNames(families, e), "; ")
		if want == "" {
			require.Empty(t, problems, expr)
		} else {
			require.Contains(t, problems, want, expr)
		}
	}
}

// TestAlertThresholdsMatchTheAlerts: a panel that names an alert of
// deploy/prometheus/alerts.yaml draws the alert's own expression (less the
// dashboard's job filter) with a threshold line at the alert's value.
func TestAlertThresholdsMatchTheAlerts(t *testing.T) {
	t.Parallel()
	_, panels := load(t)
	tied := 0
	for alertName, expr := range alertExprs(t) {
		for _, p := range panels {
			if !strings.Contains(p.Description, alertName+" alert's threshold") {
				continue
			}
			tied++
			alert, err := promql(expr)
			require.NoError(t, err, alertName)
			cmp, ok := alert.(*parser.BinaryExpr)
			require.True(t, ok && cmp.Op.IsComparisonOperator(), "%s: not a comparison", alertName)
			limit, ok := cmp.RHS.(*parser.NumberLiteral)
			require.True(t, ok, "%s: the threshold is not a number", alertName)

			var drawn []string
			for _, target := range p.Targets {
				e, err := promql(target.Expr)
				require.NoError(t, err)
				drawn = append(drawn, withoutJob(e).String())
			}
			require.Contains(t, drawn, cmp.LHS.String(), "panel %q draws %s's expression", p.Title, alertName)
			th := p.FieldConfig.Defaults.Thresholds
			require.NotNil(t, th, "panel %q has thresholds", p.Title)
			var values []float64
			for _, s := range th.Steps {
				if s.Value != nil {
					values = append(values, *s.Value)
				}
			}
			require.Contains(t, values, limit.Val, "panel %q: a threshold at %s's %v", p.Title, alertName, limit.Val)
			require.Equal(t, "line", p.FieldConfig.Defaults.Custom.ThresholdsStyle.Mode, "panel %q shows its threshold as a line", p.Title)
		}
	}
	require.GreaterOrEqual(t, tied, 2, "the zombie rate and the cleanup duration panels draw their alerts")
}

// withoutJob drops the dashboard's job=~"$job" matchers.
func withoutJob(e parser.Expr) parser.Expr {
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			vs.LabelMatchers = slices.DeleteFunc(vs.LabelMatchers, func(m *labels.Matcher) bool { return m.Name == "job" })
		}
		return nil
	})
	return e
}

// TestLayout: unique ids, panels inside the 24-column grid without
// overlapping, every panel on the chosen Prometheus data source.
func TestLayout(t *testing.T) {
	t.Parallel()
	d, panels := load(t)
	require.Equal(t, "seatd", d.UID)
	ids := map[int]bool{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	for _, p := range panels {
		require.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		require.NotEmpty(t, p.Title, "panel %d", p.ID)
		g := p.GridPos
		require.True(t, g.W > 0 && g.H > 0 && g.X >= 0 && g.X+g.W <= 24, "panel %q: gridPos %+v", p.Title, g)
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				other, ok := taken[cell{x, y}]
				require.False(t, ok, "panels %q and %q overlap at %d,%d", p.Title, other, x, y)
				taken[cell{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		require.NotNil(t, p.Datasource, "panel %q", p.Title)
		require.Equal(t, "${datasource}", p.Datasource.UID, "panel %q", p.Title)
		require.NotEmpty(t, p.Targets, "panel %q", p.Title)
		require.NotEmpty(t, p.Description, "panel %q says what it shows", p.Title)
	}
}

// unwatched are seatd's metrics that no panel draws and no alert uses, each
// with the reason. Every other seatd_ metric must be on the dashboard or in
// an alert (TestEveryMetricIsWatched), so that a new metric is not
// forgotten: draw it, alert on it, or say here why neither.
var unwatched = map[string]string{
	"seatd_end_repair_batch": "a setting (--end-repair-batch), exported to read beside seatd_ended_leases_behind when a backlog builds",
}

// alertExprs are the expressions of deploy/prometheus/alerts.yaml, by
// alert name.
func alertExprs(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("../prometheus/alerts.yaml")
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(data, &rules))
	out := map[string]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = r.Expr
		}
	}
	require.NotEmpty(t, out)
	return out
}

// familiesIn names the metric families expr reads (a histogram's, for its
// _bucket, _sum and _count series).
func familiesIn(families map[string]family, expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		if _, ok := families[name]; !ok {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if _, ok := families[strings.TrimSuffix(name, suffix)]; ok && strings.HasSuffix(name, suffix) {
					name = strings.TrimSuffix(name, suffix)
				}
			}
		}
		names = append(names, name)
		return nil
	})
	return names
}

// TestEveryMetricIsWatched: each seatd_ metric the daemon exports is drawn
// by a panel, read by an alert, or listed in unwatched with a reason; and
// nothing in unwatched is drawn, alerted on, or gone.
func TestEveryMetricIsWatched(t *testing.T) {
	t.Parallel()
	families := exported(t)
	watched := map[string][]string{} // metric → where
	_, panels := load(t)
	for _, p := range panels {
		for _, target := range p.Targets {
			e, err := promql(target.Expr)
			require.NoError(t, err, "panel %q", p.Title)
			for _, name := range familiesIn(families, e) {
				watched[name] = append(watched[name], "panel "+p.Title)
			}
		}
	}
	for alert, expr := range alertExprs(t) {
		e, err := promql(expr)
		require.NoError(t, err, alert)
		for _, name := range familiesIn(families, e) {
			watched[name] = append(watched[name], "alert "+alert)
		}
	}
	var missing []string
	for name := range families {
		if !strings.HasPrefix(name, "seatd_") {
			continue
		}
		_, listed := unwatched[name]
		switch {
		case len(watched[name]) == 0 && !listed:
			missing = append(missing, name)
		case len(watched[name]) > 0 && listed:
			t.Errorf("%s is in unwatched but is used by %v: take it off the list", name, watched[name])
		}
	}
	slices.Sort(missing)
	require.Empty(t, missing, "seatd metrics with no panel (deploy/grafana/seatd.json), no alert (deploy/prometheus/alerts.yaml) and no reason in unwatched")
	for name := range unwatched {
		require.Contains(t, families, name, "unwatched names a metric seatd does not export")
	}
}
