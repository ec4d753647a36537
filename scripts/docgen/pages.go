package main

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/seatd/seatd/server/gateway"
)

func (g *generator) openAPIReference() error {
	raw, err := gateway.OpenAPIDocument()
	if err != nil {
		return err
	}
	g.files["docs/reference/openapi.json"] = append(raw, '\n')
	raw31, err := gateway.OpenAPI31Document()
	if err != nil {
		return err
	}
	g.files["docs/reference/openapi-3.1.json"] = append(raw31, '\n')
	var doc struct {
		Info struct {
			Title, Version string
		} `json:"info"`
		Paths map[string]map[string]struct {
			Summary  string `json:"summary"`
			Security []any  `json:"security"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	b := header("OpenAPI document", "the document seatd serves at `GET /openapi.json`")
	fmt.Fprintf(b, "seatd serves its REST API's OpenAPI document (Swagger 2.0, %q, version %s) at `GET /openapi.json` "+
		"on its HTTP port: the one generated from the protos (`gen/openapi/seatd.swagger.json`; titles, the `Bearer` "+
		"security scheme and a summary per call from `server/gateway/openapi.config.yaml`) with the routes that are "+
		"not gRPC methods. The same document, as this version of seatd serves it: [openapi.json](openapi.json) "+
		"(load it into Swagger UI, Postman or an OpenAPI client generator).\n\n", doc.Info.Title, doc.Info.Version)
	b.WriteString("The same API as **OpenAPI 3.1** is served at `GET /openapi-3.1.json` (converted from the 2.0 document " +
		"by kin-openapi's `openapi2conv`): [openapi-3.1.json](openapi-3.1.json). Most client generators today read " +
		"OpenAPI 3 (oapi-codegen reads nothing else).\n\n")
	b.WriteString("**Optional fields.** No field of a request is required by the document: the server says which " +
		"it needs (`INVALID_ARGUMENT` naming the field). Leave an optional field out rather than sending its zero " +
		"value. In the 2.0 document every timestamp is `x-nullable`, so that go-swagger gives it a pointer left " +
		"unset; in the 3.1 document no property is listed as required, so generators (oapi-codegen) give each a " +
		"pointer. A timestamp of `0001-01-01T00:00:00Z` in a request (the zero time a generated client may still " +
		"send for a timestamp it never set) is taken as unset: a license or grant without an expiry or start, a " +
		"report without a start or end. Both documents are checked by generating clients with go-swagger and " +
		"oapi-codegen and running them against seatd (e2e `TestGeneratedRESTClients`).\n\n")
	b.WriteString("| method | path | summary | key |\n|---|---|---|---|\n")
	paths := make([]string, 0, len(doc.Paths))
	for p := range doc.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		methods := make([]string, 0, len(doc.Paths[p]))
		for m := range doc.Paths[p] {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		for _, m := range methods {
			op := doc.Paths[p][m]
			key := "—"
			if len(op.Security) > 0 {
				key = "Bearer"
			}
			fmt.Fprintf(b, "| `%s` | `%s` | %s | %s |\n", strings.ToUpper(m), p, cell(op.Summary), key)
		}
	}
	g.files["docs/reference/openapi.md"] = b.Bytes()
	return nil
}

func (g *generator) alertsPage() error {
	const file = "deploy/prometheus/alerts.yaml"
	raw, err := g.read(file)
	if err != nil {
		return err
	}
	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(raw, &rules); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	b := header("Alerts", "`deploy/prometheus/alerts.yaml`")
	b.WriteString("`deploy/prometheus/alerts.yaml` holds Prometheus alert rules for seatd; load it into Prometheus " +
		"(`rule_files`) beside a scrape of seatd's `/metrics` ([metrics](metrics.md)). CI checks them with " +
		"`promtool check rules` and `promtool test rules` (`deploy/prometheus/alerts_test.yaml`), and the Grafana " +
		"dashboard draws two of them against their thresholds.\n")
	for _, grp := range rules.Groups {
		fmt.Fprintf(b, "\n## %s\n", grp.Name)
		for _, r := range grp.Rules {
			if r.Alert == "" {
				continue
			}
			fmt.Fprintf(b, "\n### %s\n\n", r.Alert)
			fmt.Fprintf(b, "%s (severity `%s`", cell(r.Annotations["summary"]), r.Labels["severity"])
			if r.For != "" {
				fmt.Fprintf(b, ", after `%s`", r.For)
			}
			b.WriteString(").")
			if d := r.Annotations["description"]; d != "" {
				b.WriteString(" " + cell(d))
			}
			fmt.Fprintf(b, "\n\n```promql\n%s\n```\n", strings.TrimSpace(r.Expr))
		}
	}
	g.files["docs/operations/alerts.md"] = b.Bytes()
	return nil
}

var mdLink = regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)

// quickstartPage is the README's Quickstart section, its links made
// relative to the page.
func (g *generator) quickstartPage() error {
	raw, err := g.read("README.md")
	if err != nil {
		return err
	}
	_, rest, ok := strings.Cut(string(raw), "\n## Quickstart\n")
	if !ok {
		return fmt.Errorf("README.md: no \"## Quickstart\" section")
	}
	section, _, _ := strings.Cut(rest, "\n## ")
	const dir = "getting-started"
	var linkErr error
	section = mdLink.ReplaceAllStringFunc(section, func(m string) string {
		sub := mdLink.FindStringSubmatch(m)
		target := sub[1]
		if strings.Contains(target, "://") {
			return m
		}
		if !strings.HasPrefix(target, "docs/") {
			linkErr = fmt.Errorf("README.md's Quickstart links to %s, outside docs/: the site cannot follow it", target)
			return m
		}
		rel, _ := relPath(dir, strings.TrimPrefix(target, "docs/"))
		return "](" + rel + sub[2] + ")"
	})
	if linkErr != nil {
		return linkErr
	}
	b := header("Quickstart", "README.md's Quickstart section (which `e2e/walkthrough_test.go` runs)")
	b.WriteString(strings.TrimSpace(section) + "\n")
	g.files["docs/"+dir+"/quickstart.md"] = b.Bytes()
	return nil
}

// relPath is target (relative to docs/) as seen from dir (relative to docs/).
func relPath(dir, target string) (string, error) {
	up := strings.Count(path.Clean(dir), "/") + 1
	return strings.Repeat("../", up) + target, nil
}
