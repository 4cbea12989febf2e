package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ownerFile, in each server's temp dir, holds procID of the process that
// created it. A test binary killed by -timeout or ^C runs no cleanup, so the
// next harness user stops the servers it left behind and deletes their dirs.
const ownerFile = "decant-owner"

// procID identifies a live process as "PID STARTTIME"; the start time (field
// 22 of /proc/PID/stat) tells a reused pid apart. It is "" if pid is gone.
func procID(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// Fields after the command name, which may contain spaces, start at field 3.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return ""
	}
	return fmt.Sprintf("%d %s", pid, f[19])
}

// reapOrphans stops (with stop) and deletes every os.TempDir()/PREFIX* dir
// whose owner process is gone.
func reapOrphans(prefix string, stop func(root string)) {
	roots, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, root := range roots {
		b, err := os.ReadFile(filepath.Join(root, ownerFile))
		if err != nil {
			continue // not ours, or being created right now
		}
		owner := strings.TrimSpace(string(b))
		var pid int
		if _, err := fmt.Sscan(owner, &pid); err == nil && procID(pid) == owner {
			continue // owner still running
		}
		stop(root)
		os.RemoveAll(root)
	}
}
