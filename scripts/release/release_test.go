package main

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCheckVersion: a release version is semver with a leading v.
func TestCheckVersion(t *testing.T) {
	for _, v := range []string{"v0.1.0", "v1.2.3", "v1.3.0-rc.1", "v2.0.0-alpha.beta+build.7", "v10.20.30"} {
		if err := CheckVersion(v); err != nil {
			t.Errorf("CheckVersion(%q) = %v, want nil", v, err)
		}
	}
	for _, v := range []string{"", "1.2.3", "v1.2", "v1", "v01.2.3", "v1.2.3-", "v1.2.3 ", "V1.2.3", "v1.2.3-rc..1", "latest", "v1.2.3;rm"} {
		err := CheckVersion(v)
		if err == nil {
			t.Errorf("CheckVersion(%q) = nil, want an error", v)
			continue
		}
		if !strings.Contains(err.Error(), "VERSION") {
			t.Errorf("CheckVersion(%q) = %q: the error does not name VERSION", v, err)
		}
	}
}

// TestParseTargets: only the release's targets, each once.
func TestParseTargets(t *testing.T) {
	got, err := ParseTargets(" linux/amd64, windows/amd64,linux/amd64,")
	if err != nil || !slices.Equal(got, []string{"linux/amd64", "windows/amd64"}) {
		t.Fatalf("ParseTargets = %v, %v", got, err)
	}
	for _, s := range []string{"", ",", "linux/386", "plan9/amd64,linux/amd64"} {
		if _, err := ParseTargets(s); err == nil || !strings.Contains(err.Error(), "RELEASE_TARGETS") {
			t.Errorf("ParseTargets(%q) = %v, want an error naming RELEASE_TARGETS", s, err)
		}
	}
}

// TestArchivesRoundTrip: both archive formats keep names, bytes and the
// executable bit, and the same input packs the same bytes.
func TestArchivesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	doc := filepath.Join(dir, "doc")
	if err := os.WriteFile(bin, []byte("binary"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, []byte("text"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := []archiveFile{{name: "seatd", path: bin, mode: 0o755}, {name: "LICENSE", path: doc, mode: 0o644}}
	stamp := time.Unix(1_700_000_000, 0).UTC()
	want := map[string]archived{
		"p/seatd":   {data: "binary", mode: 0o755},
		"p/LICENSE": {data: "text", mode: 0o644},
	}
	for i := range 2 {
		tgz := filepath.Join(dir, fmt.Sprint("a", i, ".tar.gz"))
		zp := filepath.Join(dir, fmt.Sprint("a", i, ".zip"))
		if err := writeTarGz(tgz, "p", files, stamp); err != nil {
			t.Fatal(err)
		}
		if err := writeZip(zp, "p", files, stamp); err != nil {
			t.Fatal(err)
		}
		checkEntries(t, tgz, readTarGz(t, tgz), want)
		checkEntries(t, zp, readZip(t, zp), want)
	}
	for _, ext := range []string{".tar.gz", ".zip"} {
		a, _ := os.ReadFile(filepath.Join(dir, "a0"+ext))
		b, _ := os.ReadFile(filepath.Join(dir, "a1"+ext))
		if !bytes.Equal(a, b) {
			t.Errorf("two %s archives of the same files differ", ext)
		}
	}
}

// TestRelease runs `make release` as a user does, for a test version and
// RELEASE_TEST_TARGETS (default linux/amd64, to keep `make test` short; CI
// sets "all" once), and checks what it wrote: an archive per target with
// both binaries and the documents, SHA256SUMS that match, CycloneDX SBOMs
// that list seatd's main dependencies, and a linux/amd64 seatd that
// reports the version. Then that a bad VERSION is refused, naming it,
// with nothing written.
func TestRelease(t *testing.T) {
	targets := os.Getenv("RELEASE_TEST_TARGETS")
	switch targets {
	case "":
		targets = "linux/amd64"
	case "all":
		targets = strings.Join(Targets, ",")
	}
	want, err := ParseTargets(targets)
	if err != nil {
		t.Fatalf("RELEASE_TEST_TARGETS: %v", err)
	}
	root := repoRoot(t)
	dist := t.TempDir()
	const version = "v0.0.0-test.1"

	start := time.Now()
	out, err := makeRelease(root, "VERSION="+version, "RELEASE_TARGETS="+targets, "DIST="+dist)
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	t.Logf("make release for %s: %s", targets, time.Since(start).Round(time.Second))

	dir := filepath.Join(dist, version)
	sums := checkSums(t, dir)
	for _, target := range want {
		goos, goarch, _ := strings.Cut(target, "/")
		prefix := fmt.Sprintf("seatd_%s_%s_%s", version, goos, goarch)
		exe := ""
		archive := filepath.Join(dir, prefix+".tar.gz")
		read := readTarGz
		if goos == "windows" {
			exe = ".exe"
			archive = filepath.Join(dir, prefix+".zip")
			read = readZip
		}
		if !sums[filepath.Base(archive)] {
			t.Errorf("%s is not in SHA256SUMS", filepath.Base(archive))
		}
		entries := read(t, archive)
		for _, name := range []string{"seatd" + exe, "seatctl" + exe, "LICENSE", "README.md", "CHANGELOG.md"} {
			e, ok := entries[prefix+"/"+name]
			if !ok {
				t.Errorf("%s: no %s/%s", archive, prefix, name)
				continue
			}
			if strings.HasPrefix(name, "seat") && e.mode&0o111 == 0 {
				t.Errorf("%s: %s is not executable (%o)", archive, name, e.mode)
			}
		}
		for _, bin := range []string{"seatd", "seatctl"} {
			sbom := fmt.Sprintf("%s_%s_%s_%s.cdx.json", bin, version, goos, goarch)
			if !sums[sbom] {
				t.Errorf("%s is not in SHA256SUMS", sbom)
			}
			checkSBOM(t, filepath.Join(dir, sbom), version, bin == "seatd")
		}
		if target == runtime.GOOS+"/"+runtime.GOARCH && goos == "linux" {
			checkVersionOutput(t, []byte(entries[prefix+"/seatd"].data), version)
		}
	}

	// A bad VERSION: refused before anything is built or removed.
	for _, bad := range []string{"VERSION=1.2.3", "VERSION=v1.2", "VERSION="} {
		out, err := makeRelease(root, bad, "RELEASE_TARGETS="+targets, "DIST="+dist)
		if err == nil {
			t.Errorf("make release %s succeeded:\n%s", bad, out)
		}
		if !strings.Contains(out, "VERSION") {
			t.Errorf("make release %s: the error does not name VERSION:\n%s", bad, out)
		}
	}
	if _, err := makeRelease(root, "VERSION="+version, "RELEASE_TARGETS=linux/386", "DIST="+dist); err == nil {
		t.Errorf("make release RELEASE_TARGETS=linux/386 succeeded")
	}
	if ents, _ := os.ReadDir(dist); len(ents) != 1 {
		t.Errorf("refused releases changed %s: %v", dist, ents)
	}
	if after := checkSums(t, dir); len(after) != len(sums) {
		t.Errorf("refused releases changed the release: %d files, were %d", len(after), len(sums))
	}
}

// makeRelease runs make release in root with the given variables.
func makeRelease(root string, vars ...string) (string, error) {
	cmd := exec.Command("make", append([]string{"--no-print-directory", "release"}, vars...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Fatalf("the repository's Makefile: %v", err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is not installed (apt-get install -y make): %v", err)
	}
	return root
}

// checkSums verifies SHA256SUMS against the files beside it, and that it
// lists every one of them; it returns the names it lists.
func checkSums(t *testing.T, dir string) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatalf("SHA256SUMS: %v", err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("SHA256SUMS: a line not in `sha256sum` format: %q", sc.Text())
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("SHA256SUMS lists %s: %v", name, err)
		}
		h := sha256.Sum256(data)
		if got := hex.EncodeToString(h[:]); got != sum {
			t.Errorf("SHA256SUMS: %s is %s, the file's sum is %s", name, sum, got)
		}
		listed[name] = true
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "SHA256SUMS" && !listed[e.Name()] {
			t.Errorf("%s is not in SHA256SUMS", e.Name())
		}
	}
	return listed
}

// cdxBOM is what the test reads of a CycloneDX JSON document.
type cdxBOM struct {
	BOMFormat   string `json:"bomFormat"`
	SpecVersion string `json:"specVersion"`
	Metadata    struct {
		Component cdxComponent `json:"component"`
	} `json:"metadata"`
	Components   []cdxComponent `json:"components"`
	Dependencies []struct {
		Ref string `json:"ref"`
	} `json:"dependencies"`
}

type cdxComponent struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	Version string `json:"version"`
	PURL    string `json:"purl"`
	Hashes  []struct {
		Alg     string `json:"alg"`
		Content string `json:"content"`
	} `json:"hashes"`
	Licenses []json.RawMessage `json:"licenses"`
	Evidence struct {
		Licenses []json.RawMessage `json:"licenses"`
	} `json:"evidence"`
}

// checkSBOM: a CycloneDX 1.x JSON document of seatd at version, whose
// components (seatd's, when server) include grpc, pgx and go-redis, each
// with a version, a purl, a hash and a license.
func checkSBOM(t *testing.T, path, version string, server bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("SBOM: %v", err)
	}
	var bom cdxBOM
	if err := json.Unmarshal(data, &bom); err != nil {
		t.Fatalf("%s does not parse as JSON: %v", path, err)
	}
	if bom.BOMFormat != "CycloneDX" || !strings.HasPrefix(bom.SpecVersion, "1.") {
		t.Fatalf("%s: bomFormat %q specVersion %q, want CycloneDX 1.x", path, bom.BOMFormat, bom.SpecVersion)
	}
	main := bom.Metadata.Component
	if main.Name != "github.com/seatd/seatd" || main.Version != version {
		t.Errorf("%s: describes %s %s, want github.com/seatd/seatd %s", path, main.Name, main.Version, version)
	}
	if len(bom.Dependencies) == 0 {
		t.Errorf("%s: no dependency graph", path)
	}
	byName := map[string]cdxComponent{}
	for _, c := range bom.Components {
		byName[c.Name] = c
	}
	want := []string{"google.golang.org/grpc", "google.golang.org/protobuf"}
	if server {
		want = append(want, "github.com/jackc/pgx/v5", "github.com/redis/go-redis/v9", "go.etcd.io/bbolt")
	}
	for _, name := range want {
		c, ok := byName[name]
		if !ok {
			t.Errorf("%s does not list %s (%d components)", path, name, len(bom.Components))
			continue
		}
		if c.Version == "" || !strings.HasPrefix(c.PURL, "pkg:golang/"+name+"@") || len(c.Hashes) == 0 {
			t.Errorf("%s: %s without a version, purl or hash: %+v", path, name, c)
		}
		if len(c.Licenses)+len(c.Evidence.Licenses) == 0 {
			t.Errorf("%s: %s without a license", path, name)
		}
	}
}

// checkVersionOutput runs the released seatd's --version.
func checkVersionOutput(t *testing.T, binary []byte, version string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seatd")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("seatd --version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "seatd "+version+" (revision ") {
		t.Errorf("seatd --version = %q, want seatd %s (revision …)", out, version)
	}
}

type archived struct {
	data string
	mode int64
}

func checkEntries(t *testing.T, archive string, got, want map[string]archived) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d entries, want %d", archive, len(got), len(want))
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s: %s = %+v (present %v), want %+v", archive, name, g, ok, w)
		}
	}
}

func readTarGz(t *testing.T, path string) map[string]archived {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	out := map[string]archived{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[h.Name] = archived{data: string(data), mode: h.Mode}
	}
}

func readZip(t *testing.T, path string) map[string]archived {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer zr.Close()
	out := map[string]archived{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[f.Name] = archived{data: string(data), mode: int64(f.Mode().Perm())}
	}
	return out
}
