// Package buildversion names the version of the running program for
// --version: its module version, else the commit it was built from, from
// the build information the Go toolchain embeds.
package buildversion

import "runtime/debug"

// Fallback is the version of a build that carries neither a module version
// nor a commit (go run outside a repository, a test binary).
const Fallback = "devel"

// Get returns the version of the running program (see Of).
func Get() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Fallback
	}
	return Of(info)
}

// Of returns the version info describes: the main module's version (go
// install smith/cmd/smithc@v1.2.0, or the pseudo-version go build stamps
// from the repository), else the commit (12 hex digits, "-dirty" when the
// tree had changes), else Fallback.
func Of(info *debug.BuildInfo) string {
	if info == nil {
		return Fallback
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return Fallback
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
