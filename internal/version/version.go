// Package version says what a binary was built from: its own version and
// commit, and the versions of the Temporal server and SDK compiled in.
package version

import (
	"fmt"
	"runtime/debug"
)

// Info is what a binary was built from.
type Info struct {
	Version   string // the module's version, "(devel)" when built from a checkout
	Commit    string // the VCS revision, with "-dirty" for a modified tree; "" if unknown
	Server    string // go.temporal.io/server
	SDK       string // go.temporal.io/sdk
	GoRuntime string
}

// Read returns the Info of the running binary.
func Read() Info {
	info := Info{Version: "(devel)", Server: "unknown", SDK: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.GoRuntime = bi.GoVersion
	if v := bi.Main.Version; v != "" {
		info.Version = v
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(info.Commit) > 12 {
		info.Commit = info.Commit[:12]
	}
	if dirty && info.Commit != "" {
		info.Commit += "-dirty"
	}
	for _, d := range bi.Deps {
		switch d.Path {
		case "go.temporal.io/server":
			info.Server = d.Version
		case "go.temporal.io/sdk":
			info.SDK = d.Version
		}
	}
	return info
}

// String is the version line of a binary: version, commit, and the
// Temporal versions it was built with.
func (i Info) String() string {
	commit := i.Commit
	if commit == "" {
		commit = "unknown commit"
	}
	return fmt.Sprintf("%s (%s), Temporal server %s, Temporal Go SDK %s, %s", i.Version, commit, i.Server, i.SDK, i.GoRuntime)
}
