package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestScenarios runs every folder under scenarios/: schema.sql is created
// on source and target, decant init runs, then workload.sql runs on the
// source while `decant run` streams; after a clean stop, `run --catch-up`
// applies the rest and every table must equal the source, row for row.
func TestScenarios(t *testing.T) {
	dirs, err := filepath.Glob("scenarios/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			schema := mustRead(t, filepath.Join(dir, "schema.sql"))
			workload := mustRead(t, filepath.Join(dir, "workload.sql"))
			p := newPair(t)
			p.both(schema)
			p.mustDecant("init")
			t0 := time.Now()
			a := p.start("--log-level", "debug")
			psql(t, p.src, workload)
			t.Logf("workload %v", time.Since(t0))
			time.Sleep(200 * time.Millisecond)
			a.stop(t)
			t.Logf("stopped %v\n%s", time.Since(t0), a.stderr.String())
			p.catchUp()
			t.Logf("caught up %v", time.Since(t0))
		})
	}
}

func mustRead(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
