package daemon

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sync"
)

// Set at link time by `make build`, e.g.
//
//	-ldflags "-X github.com/seatd/seatd/server/daemon.version=v1.2.3 -X github.com/seatd/seatd/server/daemon.revision=abc123"
//
// Left empty, both come from the build information the go command stamps
// into the binary (the main module's version and vcs.revision).
var version, revision string

// BuildInfo says which seatd this is: `seatd version` and the
// seatd_build_info metric.
type BuildInfo struct {
	Version   string // v1.2.3, a pseudo-version from git, or "(devel)"
	Revision  string // the git commit, "+dirty" when the tree had changes; "unknown" without VCS
	GoVersion string
}

var buildInfo = sync.OnceValue(func() BuildInfo { return readBuildInfo(version, revision) })

// readBuildInfo fills what the linker flags left empty from the go
// command's build information.
func readBuildInfo(version, revision string) BuildInfo {
	b := BuildInfo{Version: version, Revision: revision, GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if ok {
		var rev string
		dirty := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" && dirty {
			rev += "+dirty"
		}
		if b.Revision == "" {
			b.Revision = rev
		}
		if b.Version == "" {
			b.Version = info.Main.Version
		}
	}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	if b.Revision == "" {
		b.Revision = "unknown"
	}
	return b
}

// Build returns this binary's BuildInfo.
func Build() BuildInfo { return buildInfo() }

func (b BuildInfo) String() string {
	return fmt.Sprintf("seatd %s (revision %s, %s)", b.Version, b.Revision, b.GoVersion)
}

// versionMain is `seatd version` and `seatd --version`.
func versionMain(stdout io.Writer) int {
	fmt.Fprintln(stdout, Build())
	return 0
}
