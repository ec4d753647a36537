// Command release cuts a seatd release: `make release VERSION=v1.2.3`.
//
// For each target it cross-builds seatd and seatctl (CGO_ENABLED=0,
// -trimpath, the version and git revision stamped the way `seatd --version`
// reads them) and packs them with LICENSE, README.md and CHANGELOG.md into
// an archive (tar.gz; zip for Windows). Beside the archives it writes a
// CycloneDX SBOM of each binary (cyclonedx-gomod, pinned in tools/sbom) and
// SHA256SUMS of everything. docs/development/release.md is the user's page.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Targets is what a release builds by default (RELEASE_TARGETS).
var Targets = []string{"linux/amd64", "linux/arm64", "darwin/arm64", "windows/amd64"}

// semverPattern is the regular expression semver.org gives for a semantic
// version (2.0.0), with the leading v Go modules and git tags use.
var semverPattern = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// binaries are the commands a release ships: name and main package.
var binaries = []struct{ name, pkg string }{
	{"seatd", "./server/cmd/seatd"},
	{"seatctl", "./client/cmd/seatctl"},
}

// docs are the repository files every archive carries.
var docs = []string{"LICENSE", "README.md", "CHANGELOG.md"}

const daemonPkg = "github.com/seatd/seatd/server/daemon"

// CheckVersion says why v is not a release version, or nil.
func CheckVersion(v string) error {
	if v == "" {
		return errors.New("VERSION is required: make release VERSION=v1.2.3")
	}
	if !semverPattern.MatchString(v) {
		return fmt.Errorf("VERSION %q is not a semantic version with a leading v "+
			"(vMAJOR.MINOR.PATCH, optionally -PRERELEASE or +BUILD: v1.2.3, v1.3.0-rc.1)", v)
	}
	return nil
}

// ParseTargets reads a comma-separated list of GOOS/GOARCH pairs, each
// one of Targets.
func ParseTargets(s string) ([]string, error) {
	var out []string
	for t := range strings.SplitSeq(s, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if !slices.Contains(Targets, t) {
			return nil, fmt.Errorf("RELEASE_TARGETS: %q is not a release target (one or more of %s)", t, strings.Join(Targets, ","))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("RELEASE_TARGETS is empty (one or more of %s)", strings.Join(Targets, ","))
	}
	return out, nil
}

type config struct {
	version string
	targets []string
	out     string // the release goes to out/version
	root    string // the repository
	goCmd   string
	log     io.Writer
}

func main() {
	var c config
	var targets string
	flag.StringVar(&c.version, "version", "", "the release's version: v1.2.3 (semver with a leading v)")
	flag.StringVar(&targets, "targets", strings.Join(Targets, ","), "comma-separated GOOS/GOARCH pairs to build")
	flag.StringVar(&c.out, "out", "dist", "the release is written to OUT/VERSION (replaced if it exists)")
	flag.StringVar(&c.goCmd, "go", "go", "the go command")
	flag.Parse()
	c.log = os.Stderr
	if err := c.setup(targets); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(2)
	}
	if err := c.run(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// setup checks the input before anything is written.
func (c *config) setup(targets string) error {
	if err := CheckVersion(c.version); err != nil {
		return err
	}
	t, err := ParseTargets(targets)
	if err != nil {
		return err
	}
	c.targets = t
	if c.out == "" {
		return errors.New("the output directory (DIST) is empty")
	}
	gomod, err := output(".", c.goCmd, nil, "env", "GOMOD")
	if err != nil {
		return fmt.Errorf("finding the repository: %w", err)
	}
	if filepath.Base(gomod) != "go.mod" {
		return errors.New("run it from the seatd repository (go env GOMOD found no go.mod)")
	}
	c.root = filepath.Dir(gomod)
	if c.out, err = filepath.Abs(c.out); err != nil {
		return err
	}
	return nil
}

func (c *config) run() (err error) {
	start := time.Now()
	revision, stamp := c.revision()
	dir := filepath.Join(c.out, c.version)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	defer func() {
		if err != nil { // no half release left to be mistaken for one
			_ = os.RemoveAll(dir)
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp("", "seatd-release-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(stage) }()

	ldflags := fmt.Sprintf("-s -w -X %s.version=%s -X %s.revision=%s", daemonPkg, c.version, daemonPkg, revision)
	type built struct{ path, sbom string }
	var bins []built
	for _, target := range c.targets {
		goos, goarch, _ := strings.Cut(target, "/")
		name := fmt.Sprintf("seatd_%s_%s_%s", c.version, goos, goarch)
		var files []archiveFile
		for _, b := range binaries {
			exe := b.name
			if goos == "windows" {
				exe += ".exe"
			}
			path := filepath.Join(stage, target, exe)
			fmt.Fprintf(c.log, "release: building %s for %s\n", b.name, target)
			env := []string{"CGO_ENABLED=0", "GOOS=" + goos, "GOARCH=" + goarch}
			if _, err := output(c.root, c.goCmd, env, "build", "-trimpath", "-buildvcs=false",
				"-ldflags", ldflags, "-o", path, b.pkg); err != nil {
				return fmt.Errorf("building %s for %s: %w", b.name, target, err)
			}
			files = append(files, archiveFile{name: exe, path: path, mode: 0o755})
			bins = append(bins, built{path: path,
				sbom: filepath.Join(dir, fmt.Sprintf("%s_%s_%s_%s.cdx.json", b.name, c.version, goos, goarch))})
		}
		for _, d := range docs {
			files = append(files, archiveFile{name: d, path: filepath.Join(c.root, d), mode: 0o644})
		}
		var err error
		if goos == "windows" {
			err = writeZip(filepath.Join(dir, name+".zip"), name, files, stamp)
		} else {
			err = writeTarGz(filepath.Join(dir, name+".tar.gz"), name, files, stamp)
		}
		if err != nil {
			return fmt.Errorf("packing %s: %w", name, err)
		}
	}

	// The SBOMs are read from the binaries themselves (the modules and
	// their hashes the linker recorded), so each describes exactly what
	// ships. They wait mostly on license detection: all at once.
	fmt.Fprintf(c.log, "release: %d CycloneDX SBOMs (cyclonedx-gomod)\n", len(bins))
	if err := c.sbomTool(); err != nil {
		return err
	}
	errs := make([]error, len(bins))
	var wg sync.WaitGroup
	for i, b := range bins {
		wg.Go(func() { errs[i] = c.sbom(b.path, b.sbom) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	if err := writeSums(dir); err != nil {
		return err
	}
	fmt.Fprintf(c.log, "release: %s in %s (%s)\n", c.version, dir, time.Since(start).Round(time.Second))
	return nil
}

// sbomTool builds the pinned cyclonedx-gomod once, with the module proxy
// allowed: on a machine that never ran it, its own modules are not in the
// cache, and sbom runs it with the proxy off.
func (c *config) sbomTool() error {
	if _, err := output(c.root, c.goCmd, nil,
		"tool", "-modfile="+filepath.Join(c.root, "tools", "sbom", "go.mod"), "cyclonedx-gomod", "version"); err != nil {
		return fmt.Errorf("cyclonedx-gomod (tools/sbom): %w", err)
	}
	return nil
}

// sbom writes the CycloneDX JSON SBOM of one binary. The go command it
// runs to read module licenses stays off the network (GOPROXY=off): the
// build has just put every module in the cache, and seatd itself is not
// on a proxy (its license is the archive's LICENSE). It reads them outside
// seatd's module, where go would check each against the checksum
// database, which is off the network too (GOSUMDB=off): the build checked
// them against go.sum when it put them in the cache.
func (c *config) sbom(bin, out string) error {
	_, err := output(c.root, c.goCmd, []string{"GOPROXY=off", "GOSUMDB=off"},
		"tool", "-modfile="+filepath.Join(c.root, "tools", "sbom", "go.mod"), "cyclonedx-gomod",
		"bin", "-json", "-licenses", "-version", c.version, "-output", out, bin)
	if err != nil {
		return fmt.Errorf("SBOM of %s: %w", bin, err)
	}
	return nil
}

// revision is the git commit (with +dirty when the tree has changes, as
// `make build` stamps it) and the commit's time, which the archives give
// their files so that the same commit packs the same bytes
// (SOURCE_DATE_EPOCH, when set, wins).
func (c *config) revision() (string, time.Time) {
	revision, stamp := "unknown", time.Unix(0, 0)
	if out, err := output(c.root, "git", nil, "rev-parse", "HEAD"); err == nil {
		revision = out
		if _, err := output(c.root, "git", nil, "diff", "--quiet", "HEAD"); err != nil {
			revision += "+dirty"
			fmt.Fprintln(c.log, "release: warning: the working tree has changes; the binaries say revision", revision)
		}
		if ct, err := output(c.root, "git", nil, "log", "-1", "--format=%ct"); err == nil {
			if sec, err := strconv.ParseInt(ct, 10, 64); err == nil {
				stamp = time.Unix(sec, 0)
			}
		}
	}
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if sec, err := strconv.ParseInt(s, 10, 64); err == nil {
			stamp = time.Unix(sec, 0)
		}
	}
	return revision, stamp.UTC()
}

// output runs a command in dir and returns its trimmed stdout; an error
// carries its stderr.
func output(dir, name string, env []string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

type archiveFile struct {
	name, path string
	mode       int64
}

// writeTarGz packs files under the directory prefix, owned by root, with
// the given modification time.
func writeTarGz(path, prefix string, files []archiveFile, mtime time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // closed below; this is for an early return
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: prefix + "/", Mode: 0o755,
		ModTime: mtime, Format: tar.FormatPAX}); err != nil {
		return err
	}
	for _, af := range files {
		data, err := os.ReadFile(af.path)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: prefix + "/" + af.name,
			Mode: af.mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}

// writeZip is writeTarGz for Windows.
func writeZip(path, prefix string, files []archiveFile, mtime time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // closed below; this is for an early return
	zw := zip.NewWriter(f)
	for _, af := range files {
		data, err := os.ReadFile(af.path)
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: prefix + "/" + af.name, Method: zip.Deflate, Modified: mtime}
		h.SetMode(os.FileMode(af.mode))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// writeSums writes SHA256SUMS for every file in dir, in the format
// `sha256sum -c` reads.
func writeSums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != "SHA256SUMS" {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var sums strings.Builder
	for _, n := range names {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		_ = f.Close() // read only
		if err != nil {
			return err
		}
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), n)
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(sums.String()), 0o644)
}
