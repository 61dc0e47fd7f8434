package cmd

import "runtime/debug"

// Version overrides the version the build tells (buildVersion): the
// module root's main sets it from its own version, which -ldflags
// "-X main.version=..." stamps (the release script, the Dockerfile).
var Version string

// buildVersion is the version `--version`, NIP-11 and the start log name
// (RL-30): the -ldflags override, else what the Go toolchain recorded in
// the binary (versionOf).
func buildVersion() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	return versionOf(info)
}

// versionOf reads a version from build information: the module version
// when built as a module (`go install …@v1.2.3`, or from a checkout by a
// Go that stamps one, a pseudo-version naming the commit, with +dirty
// when the tree was modified); else the VCS revision (12 characters, with
// +dirty); else "(devel)", which is what a checkout built with
// -buildvcs=false, or outside its repository, is: the toolchain recorded
// nothing to name it by.
func versionOf(info *debug.BuildInfo) string {
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
		return "(devel)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}
