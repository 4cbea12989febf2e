package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is what a binary knows of where it came from, as the Go
// toolchain stamped it: go build in a git checkout records the commit,
// its time and whether the tree was modified (and, since Go 1.24, a
// module version derived from them); go run and builds outside a
// checkout record none of that.
type buildVersion struct {
	module, commit, time, goVersion string
	modified                        bool
}

// readVersion is this binary's build information.
func readVersion() buildVersion {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return buildVersion{goVersion: runtime.Version()}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) buildVersion {
	v := buildVersion{module: bi.Main.Version, goVersion: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.commit = s.Value
		case "vcs.time":
			v.time = s.Value
		case "vcs.modified":
			v.modified = s.Value == "true"
		}
	}
	return v
}

// String is the text of decant --version and decant version.
func (v buildVersion) String() string {
	or := func(s, absent string) string {
		if s == "" {
			return absent
		}
		return s
	}
	commit := or(v.commit, "unknown")
	if v.modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("decant %s\ncommit %s\nbuilt  %s\ngo     %s\n",
		or(v.module, "(devel)"), commit, or(v.time, "unknown"), or(v.goVersion, runtime.Version()))
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print decant's version, the commit and time it was built from, and its Go version",
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), readVersion())
			return err
		},
	}
}
