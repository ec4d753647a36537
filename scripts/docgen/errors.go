package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
)

// reason is one ErrorInfo reason and what the source says of it.
type reason struct {
	name     string          // e.g. SEATS_EXHAUSTED
	constant string          // e.g. ReasonSeatsExhausted ("" for a literal)
	doc      string          // the constant's comment
	codes    map[string]bool // gRPC codes it is sent with
	restOnly bool            // set by the REST gateway only
	messages map[string]bool // literal messages it is raised with
	files    map[string]bool
}

// errorSource reads the server's Go source (not its tests): the Reason
// constants of package server, grpcapi's code → gRPC code table, and every
// place a reason is raised: server.Errorf(code, reason, msg),
// server.Error{Code, Reason}, grpcapi's refusal(codes.X, reason, ...), and
// the gateway's ErrorInfo{Reason} (REST only).
func (g *generator) errorSource() (map[string]*reason, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	var names []string
	err := filepath.WalkDir(filepath.Join(g.root, "server"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.Contains(path, string(filepath.Separator)+"storetest"+string(filepath.Separator)) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(g.root, path)
		files = append(files, f)
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, err
	}
	reasons := map[string]*reason{} // by value
	byConst := map[string]*reason{}
	codeOf := map[string]string{} // server.EXXX → gRPC code name
	get := func(value string) *reason {
		r := reasons[value]
		if r == nil {
			r = &reason{name: value, codes: map[string]bool{}, messages: map[string]bool{}, files: map[string]bool{}}
			reasons[value] = r
		}
		return r
	}
	// Pass 1: the constants and the code table.
	for i, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			lastDoc := "" // a comment over consts holds for those after it
			for _, spec := range gd.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					if gd.Tok == token.CONST && f.Name.Name == "server" {
						for j, n := range s.Names {
							if !strings.HasPrefix(n.Name, "Reason") || j >= len(s.Values) {
								continue
							}
							lit, ok := s.Values[j].(*ast.BasicLit)
							if !ok || lit.Kind != token.STRING {
								continue
							}
							v, _ := strconv.Unquote(lit.Value)
							r := get(v)
							r.constant = n.Name
							if s.Doc != nil {
								r.doc = s.Doc.Text()
							} else if s.Comment != nil {
								r.doc = s.Comment.Text()
							}
							if r.doc != "" {
								lastDoc = r.doc
							}
							if r.doc == "" {
								r.doc = lastDoc
							}
							byConst[n.Name] = r
						}
					}
					if names[i] == "server/grpcapi/status.go" {
						for j, n := range s.Names {
							if n.Name != "grpcCodes" || j >= len(s.Values) {
								continue
							}
							cl, _ := s.Values[j].(*ast.CompositeLit)
							for _, el := range cl.Elts {
								kv := el.(*ast.KeyValueExpr)
								codeOf[selName(kv.Key)] = selName(kv.Value)
							}
						}
					}
				}
			}
		}
	}
	if len(codeOf) == 0 || len(byConst) == 0 {
		return nil, fmt.Errorf("server/errors.go or server/grpcapi/status.go: no Reason constants or no grpcCodes table found")
	}
	reasonOf := func(e ast.Expr) *reason {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			v, _ := strconv.Unquote(lit.Value)
			return get(v)
		}
		return byConst[selName(e)]
	}
	// Pass 2: where each is raised.
	for i, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				fn := selName(x.Fun)
				switch {
				case fn == "Errorf" && len(x.Args) >= 3 && !isPkgCall(x.Fun, "status", "fmt"):
					if r := reasonOf(x.Args[1]); r != nil {
						r.files[names[i]] = true
						if c := codeOf[selName(x.Args[0])]; c != "" {
							r.codes[c] = true
						}
						if lit, ok := x.Args[2].(*ast.BasicLit); ok {
							m, _ := strconv.Unquote(lit.Value)
							if !strings.Contains(m, "%") {
								r.messages[m] = true
							}
						}
					}
				case fn == "refusal" && len(x.Args) >= 2:
					if r := reasonOf(x.Args[1]); r != nil {
						r.files[names[i]] = true
						r.codes[selName(x.Args[0])] = true
					}
				}
			case *ast.CompositeLit:
				typ := selName(x.Type)
				var code string
				var r *reason
				for _, el := range x.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					switch selName(kv.Key) {
					case "Code":
						code = codeOf[selName(kv.Value)]
					case "Reason":
						r = reasonOf(kv.Value)
					}
				}
				if r == nil {
					return true
				}
				r.files[names[i]] = true
				switch typ {
				case "Error":
					if code != "" {
						r.codes[code] = true
					}
				case "ErrorInfo":
					if strings.HasPrefix(names[i], "server/gateway/") && len(r.codes) == 0 {
						r.restOnly = true
					}
				}
			}
			return true
		})
	}
	return reasons, nil
}

// selName is the last name of an identifier or selector (server.EINVALID → EINVALID).
func selName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.StarExpr:
		return selName(x.X)
	case *ast.UnaryExpr:
		return selName(x.X)
	}
	return ""
}

// grpcCode is a codes.Code by its Go name (InvalidArgument).
func grpcCode(name string) (codes.Code, bool) {
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if c.String() == name {
			return c, true
		}
	}
	return 0, false
}

func (g *generator) errorReference() error {
	reasons, err := g.errorSource()
	if err != nil {
		return err
	}
	var list []*reason
	for _, r := range reasons {
		if len(r.files) == 0 && r.constant == "" {
			continue
		}
		list = append(list, r)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].name < list[j].name })
	b := header("Error reasons", "the server's source (`server/errors.go`, where each reason is raised, `server/grpcapi/status.go`)")
	b.WriteString("Every refusal carries a `google.rpc.ErrorInfo` (domain `seatd`) whose `reason` is one of these; " +
		"REST answers carry the same status and details as JSON, with the HTTP status grpc-gateway gives the gRPC code. " +
		"When each one happens, in words: [errors](../concepts/errors.md). " +
		"Errors never carry internal detail; `INTERNAL` has no reason.\n\n")
	b.WriteString("| reason | gRPC code | HTTP | raised in | messages |\n|---|---|---|---|---|\n")
	for _, r := range list {
		var grpcCodes, httpCodes []string
		for c := range r.codes {
			grpcCodes = append(grpcCodes, c)
		}
		sort.Strings(grpcCodes)
		for i, c := range grpcCodes {
			code, ok := grpcCode(c)
			if !ok {
				return fmt.Errorf("reason %s: unknown gRPC code %s", r.name, c)
			}
			grpcCodes[i] = upperSnake(code.String())
			httpCodes = append(httpCodes, strconv.Itoa(runtime.HTTPStatusFromCode(code)))
		}
		if r.name == "MESSAGE_TOO_LARGE" && r.restOnly {
			httpCodes = append(httpCodes, strconv.Itoa(http.StatusRequestEntityTooLarge))
		}
		codeText := strings.Join(grpcCodes, ", ")
		if r.restOnly && codeText == "" {
			codeText = "(REST only)"
			if len(httpCodes) == 0 {
				httpCodes = append(httpCodes, strconv.Itoa(http.StatusBadRequest))
			}
		}
		var files []string
		for f := range r.files {
			files = append(files, "`"+f+"`")
		}
		sort.Strings(files)
		var msgs []string
		for m := range r.messages {
			msgs = append(msgs, "“"+cell(m)+"”")
		}
		sort.Strings(msgs)
		desc := cell(r.doc)
		if desc != "" && len(msgs) > 0 {
			desc += " "
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s%s |\n", r.name, codeText, strings.Join(dedupe(httpCodes), ", "),
			strings.Join(files, ", "), desc, strings.Join(msgs, "; "))
	}
	g.files["docs/reference/errors.md"] = b.Bytes()
	return g.checkErrorsPage(list)
}

func dedupe(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// isPkgCall: fun is a call of a function of one of the packages named
// (status.Errorf is a gRPC status with no reason, not server.Errorf).
func isPkgCall(fun ast.Expr, pkgs ...string) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && slices.Contains(pkgs, id.Name)
}

// upperSnake turns a codes.Code's Go name into its proto name
// (ResourceExhausted → RESOURCE_EXHAUSTED).
func upperSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// checkErrorsPage: the hand-written errors page names every reason.
func (g *generator) checkErrorsPage(list []*reason) error {
	const page = "docs/concepts/errors.md"
	text, err := g.read(page)
	if err != nil {
		return err
	}
	var missing []string
	for _, r := range list {
		if !strings.Contains(string(text), "`"+r.name+"`") {
			missing = append(missing, r.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s does not name the error reasons %v: add a row for each", page, missing)
	}
	return nil
}
