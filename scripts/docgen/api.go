package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	_ "github.com/seatd/seatd/gen/seatd/v1" // the compiled descriptors seatd serves
	"github.com/seatd/seatd/server/gateway"
)

const apiPackage = "seatd.v1"

// route is one REST route of a method, from the OpenAPI document.
type route struct{ method, path string }

func (g *generator) apiReference(descriptorFile string) error {
	raw, err := os.ReadFile(descriptorFile)
	if err != nil {
		return err
	}
	var set descriptorpb.FileDescriptorSet
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, &set); err != nil {
		return fmt.Errorf("%s: %w", descriptorFile, err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return fmt.Errorf("%s: %w", descriptorFile, err)
	}
	routes, err := openAPIRoutes()
	if err != nil {
		return err
	}
	var fds []protoreflect.FileDescriptor
	files.RangeFilesByPackage(apiPackage, func(fd protoreflect.FileDescriptor) bool {
		fds = append(fds, fd)
		return true
	})
	sort.Slice(fds, func(i, j int) bool { return fds[i].Path() < fds[j].Path() })
	if len(fds) == 0 {
		return fmt.Errorf("%s: no %s files", descriptorFile, apiPackage)
	}
	// The protos built from proto/ are those compiled into gen/: the same
	// files, the same messages (a stale gen/ is verify-generate's to find,
	// but a reference of other protos than the server's would be wrong).
	for _, fd := range fds {
		compiled, err := protoregistry.GlobalFiles.FindFileByPath(fd.Path())
		if err != nil {
			return fmt.Errorf("%s is not compiled into gen/ (run make generate)", fd.Path())
		}
		if compiled.Messages().Len() != fd.Messages().Len() || compiled.Services().Len() != fd.Services().Len() {
			return fmt.Errorf("%s differs from its compiled descriptor in gen/ (run make generate)", fd.Path())
		}
	}

	b := header("gRPC and REST API", "the protos (`proto/seatd/v1`, compiled with their comments by `buf build`) and the OpenAPI document")
	b.WriteString("Package `seatd.v1`. Each method names its REST route where it has one " +
		"(`proto/seatd/v1/http.yaml`); REST bodies and answers are the messages below in protobuf JSON " +
		"(lowerCamelCase names, int64 as strings, every field written). " +
		"Errors: [error reasons](errors.md). The OpenAPI document: [OpenAPI](openapi.md).\n")
	for _, fd := range fds {
		for i := 0; i < fd.Services().Len(); i++ {
			sd := fd.Services().Get(i)
			fmt.Fprintf(b, "\n## %s {#%s}\n\n%s\n", sd.Name(), sd.FullName(), prose(comment(sd)))
			for j := 0; j < sd.Methods().Len(); j++ {
				md := sd.Methods().Get(j)
				in, out := typeLink(md.Input()), typeLink(md.Output())
				if md.IsStreamingClient() {
					in = "stream " + in
				}
				if md.IsStreamingServer() {
					out = "stream " + out
				}
				fmt.Fprintf(b, "\n### %s.%s {#%s}\n\n`rpc %s(`%s`) returns (`%s`)`\n\n", sd.Name(), md.Name(), md.FullName(), md.Name(), in, out)
				rs := routes[string(sd.Name())+"_"+string(md.Name())]
				for _, r := range rs {
					fmt.Fprintf(b, "REST: `%s %s`\n\n", strings.ToUpper(r.method), r.path)
				}
				if len(rs) == 0 {
					b.WriteString("REST: none (gRPC only)\n\n")
				}
				if c := prose(comment(md)); c != "" {
					b.WriteString(c + "\n")
				}
			}
		}
	}
	b.WriteString("\n## Messages\n")
	for _, fd := range fds {
		writeMessages(b, fd.Messages())
	}
	b.WriteString("\n## Enums\n")
	for _, fd := range fds {
		writeEnums(b, fd.Enums())
		var nested func(ms protoreflect.MessageDescriptors)
		nested = func(ms protoreflect.MessageDescriptors) {
			for i := 0; i < ms.Len(); i++ {
				writeEnums(b, ms.Get(i).Enums())
				nested(ms.Get(i).Messages())
			}
		}
		nested(fd.Messages())
	}
	g.files["docs/reference/api.md"] = b.Bytes()
	return nil
}

type writer interface {
	WriteString(string) (int, error)
}

func writeMessages(b writer, ms protoreflect.MessageDescriptors) {
	for i := 0; i < ms.Len(); i++ {
		md := ms.Get(i)
		if md.IsMapEntry() {
			continue
		}
		name := strings.TrimPrefix(string(md.FullName()), apiPackage+".")
		b.WriteString(fmt.Sprintf("\n### %s {#%s}\n\n", name, md.FullName()))
		if c := prose(comment(md)); c != "" {
			b.WriteString(c + "\n\n")
		}
		if md.Fields().Len() == 0 {
			b.WriteString("No fields.\n")
		} else {
			b.WriteString("| field | JSON | type | description |\n|---|---|---|---|\n")
			for j := 0; j < md.Fields().Len(); j++ {
				f := md.Fields().Get(j)
				desc := cell(comment(f))
				if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
					desc = strings.TrimSpace(fmt.Sprintf("(one of `%s`) %s", o.Name(), desc))
				}
				b.WriteString(fmt.Sprintf("| `%s` | `%s` | %s | %s |\n", f.Name(), f.JSONName(), fieldType(f), desc))
			}
		}
		writeMessages(b, md.Messages())
	}
}

func writeEnums(b writer, es protoreflect.EnumDescriptors) {
	for i := 0; i < es.Len(); i++ {
		ed := es.Get(i)
		name := strings.TrimPrefix(string(ed.FullName()), apiPackage+".")
		b.WriteString(fmt.Sprintf("\n### %s {#%s}\n\n", name, ed.FullName()))
		if c := prose(comment(ed)); c != "" {
			b.WriteString(c + "\n\n")
		}
		b.WriteString("| value | number | description |\n|---|---|---|\n")
		for j := 0; j < ed.Values().Len(); j++ {
			v := ed.Values().Get(j)
			b.WriteString(fmt.Sprintf("| `%s` | %d | %s |\n", v.Name(), v.Number(), cell(comment(v))))
		}
	}
}

// comment is a descriptor's leading comment from the source.
func comment(d protoreflect.Descriptor) string {
	loc := d.ParentFile().SourceLocations().ByDescriptor(d)
	c := loc.LeadingComments
	if c == "" {
		c = loc.TrailingComments
	}
	lines := strings.Split(strings.TrimSpace(c), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, "\n")
}

func fieldType(f protoreflect.FieldDescriptor) string {
	if f.IsMap() {
		return fmt.Sprintf("map&lt;%s, %s&gt;", fieldType(f.MapKey()), fieldType(f.MapValue()))
	}
	var t string
	switch f.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		t = typeLink(f.Message())
	case protoreflect.EnumKind:
		t = typeLink(f.Enum())
	default:
		t = f.Kind().String()
	}
	if f.IsList() {
		t = "repeated " + t
	}
	return t
}

// typeLink links a type of this package to its section; others are named.
func typeLink(d protoreflect.Descriptor) string {
	full := string(d.FullName())
	if strings.HasPrefix(full, apiPackage+".") {
		return fmt.Sprintf("[%s](#%s)", strings.TrimPrefix(full, apiPackage+"."), full)
	}
	return "`" + full + "`"
}

// openAPIRoutes maps an operationId (Service_Method) to its routes.
func openAPIRoutes() (map[string][]route, error) {
	raw, err := gateway.OpenAPIDocument()
	if err != nil {
		return nil, err
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	routes := map[string][]route{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			routes[op.OperationID] = append(routes[op.OperationID], route{method, path})
		}
	}
	for _, rs := range routes {
		sort.Slice(rs, func(i, j int) bool { return rs[i].path+rs[i].method < rs[j].path+rs[j].method })
	}
	return routes, nil
}
