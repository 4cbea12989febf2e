package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// loadRun parses args as run's timeout flags and loads the configuration.
func loadRun(t *testing.T, args ...string) (config, error) {
	t.Helper()
	cmd := &cobra.Command{Use: "run"}
	var f flags
	addFlags(cmd, &f, true)
	addTimeoutFlags(cmd, &f)
	if err := cmd.ParseFlags(append(args, "--source", "postgres://h/db", "--target", "postgres://h/db")); err != nil {
		t.Fatal(err)
	}
	return f.load(cmd)
}

func TestTimeouts(t *testing.T) {
	c, err := loadRun(t)
	if err != nil || c.sourceTimeout != time.Minute || c.targetTimeout != 5*time.Minute {
		t.Errorf("defaults: %s %s %v", c.sourceTimeout, c.targetTimeout, err)
	}
	c, err = loadRun(t, "--source-timeout", "3s", "--target-timeout", "0")
	if err != nil || c.sourceTimeout != 3*time.Second || c.targetTimeout != 0 {
		t.Errorf("flags: %s %s %v", c.sourceTimeout, c.targetTimeout, err)
	}
	file := filepath.Join(t.TempDir(), "decant.yaml")
	os.WriteFile(file, []byte("source_timeout: 90s\ntarget_timeout: 10m\n"), 0o600)
	c, err = loadRun(t, "--config", file, "--target-timeout", "1m")
	if err != nil || c.sourceTimeout != 90*time.Second || c.targetTimeout != time.Minute {
		t.Errorf("file, flag over file: %s %s %v", c.sourceTimeout, c.targetTimeout, err)
	}
	for _, bad := range []string{"soon", "-5s", "10"} {
		_, err := loadRun(t, "--source-timeout", bad)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("--source-timeout %s: got %v, want a usage error", bad, err)
		}
	}
}
