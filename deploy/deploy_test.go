package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The contract with the metrics and HTTP endpoint code (issue 15 part 1):
// the names every file here may use. A file that names anything else
// scrapes, alerts or probes on nothing.

// metricNames are decant's own series; histograms count with their
// _bucket, _sum and _count series.
var metricNames = names(
	"decant_up", "decant_streaming", "decant_source_connected", "decant_target_connected",
	"decant_reconnects_total", "decant_errors_total",
	"decant_lag_bytes", "decant_lag_seconds", "decant_last_applied_commit_timestamp_seconds",
	"decant_applied_position_bytes", "decant_flushed_position_bytes",
	"decant_transactions_applied_total", "decant_changes_applied_total", "decant_conflicts_total", "decant_bytes_applied_total",
	"decant_target_commits_total", "decant_spill_bytes", "decant_spill_files",
	"decant_slot_wal_status", "decant_slot_retained_wal_bytes", "decant_slot_check_timestamp_seconds",
	"decant_copy_rows_done", "decant_copy_rows_estimated", "decant_copy_bytes_done",
	"decant_webhook_events_total", "decant_webhook_queue_length", "decant_resyncs_total",
	"decant_target_commit_duration_seconds_bucket", "decant_target_commit_duration_seconds_sum", "decant_target_commit_duration_seconds_count",
	"decant_batch_transactions_bucket", "decant_batch_transactions_sum", "decant_batch_transactions_count",
)

// endpoints are the paths decant serves on --http-addr.
var endpoints = names("/metrics", "/healthz", "/readyz", "/status")

func names(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range s {
		m[n] = true
	}
	return m
}

// need returns the path of a tool the tests run, failing the test when
// the machine lacks it: make deps installs both.
func need(t *testing.T, tool string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		t.Fatalf("%s is not installed: run make deps (it installs Debian's prometheus package for promtool, systemd for systemd-analyze)", tool)
	}
	return path
}

// run runs a tool and returns its combined output, failing the test on
// a non-zero exit.
func run(t *testing.T, dir, tool string, args ...string) string {
	t.Helper()
	cmd := exec.Command(tool, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(tool), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// decantBinary builds cmd/decant once per test run as the Dockerfile
// builds it (static: CGO_ENABLED=0, -trimpath), into a directory removed
// by TestMain.
func decantBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binPath = filepath.Join(binDir, "decant")
		cmd := exec.Command("go", "build", "-trimpath", "-o", binPath, "./cmd/decant")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("build cmd/decant: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

var binDir string

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "decant-deploy-"); err != nil {
		panic(err) // no test can run without a temporary directory
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

var flagPattern = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`)

// runFlags are the flags of decant run, read from its --help.
func runFlags(t *testing.T) map[string]bool {
	t.Helper()
	out := run(t, ".", decantBinary(t), "run", "--help")
	flags := map[string]bool{}
	for _, m := range flagPattern.FindAllStringSubmatch(out, -1) {
		flags[m[1]] = true
	}
	if !flags["source"] || !flags["spill-dir"] {
		t.Fatalf("decant run --help lists no --source or --spill-dir; the pattern reads no flags from:\n%s", out)
	}
	return flags
}

var settingPattern = regexp.MustCompile(`\bDECANT_[A-Z0-9_]+`)

// TestSettingsAreFlags checks that every DECANT_* variable the deploy
// files set or mention is a flag of decant run, by the naming rule of
// cmd/decant/settings.go (--slot-wait is DECANT_SLOT_WAIT), so that none
// is silently ignored.
func TestSettingsAreFlags(t *testing.T) {
	flags := runFlags(t)
	files := []string{
		"systemd/decant@.service", "systemd/decant.env.example", "systemd/credentials.conf.example",
		"kubernetes/deployment.yaml", "Dockerfile",
	}
	seen := 0
	for _, f := range files {
		for _, v := range settingPattern.FindAllString(string(read(t, f)), -1) {
			seen++
			flag := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(v, "DECANT_")), "_", "-")
			if v != "DECANT_CONFIG" && !flags[flag] {
				t.Errorf("%s: %s is not a setting: decant run has no --%s", f, v, flag)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("found only %d DECANT_ variables in %v", seen, files)
	}
}

// TestYAMLFilesParse parses every YAML file under deploy/, each document
// of it.
func TestYAMLFilesParse(t *testing.T) {
	var files []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) < 7 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		if n := len(yamlDocs(t, f)); n == 0 {
			t.Errorf("%s: no YAML document", f)
		}
	}
}
