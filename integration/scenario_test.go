package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/mapping"
)

// TestScenarios runs every folder under scenarios/ against both targets:
// schema.sql is created on the source (and, for PostgreSQL, on the target;
// MariaDB tables come from init --create-tables), decant init runs, then
// workload.sql runs on the source while `decant run` streams; after a clean
// stop, `run --catch-up` applies the rest and every table must equal the
// source, row for row (on MariaDB, as the type mapping converts it).
//
// A scenario's optional file "policies" lists the --on-unrepresentable
// policies to run on MariaDB (default: error); "error!" means the run must
// stop with an unrepresentable-value error.
func TestScenarios(t *testing.T) {
	dirs, err := filepath.Glob("scenarios/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	for _, dir := range dirs {
		schema := mustRead(t, filepath.Join(dir, "schema.sql"))
		workload := mustRead(t, filepath.Join(dir, "workload.sql"))
		t.Run(filepath.Base(dir)+"/postgres", func(t *testing.T) {
			p := newPair(t)
			p.both(schema)
			p.mustDecant("init")
			runScenario(t, p, workload)
		})
		policies := []string{"error"}
		if b, err := os.ReadFile(filepath.Join(dir, "policies")); err == nil {
			policies = strings.Fields(string(b))
		}
		for _, policy := range policies {
			t.Run(filepath.Base(dir)+"/mariadb-"+strings.TrimSuffix(policy, "!"), func(t *testing.T) {
				p := newMySQLPair(t)
				name := strings.TrimSuffix(policy, "!")
				var err error
				if p.policy, err = mapping.ParsePolicy(name); err != nil {
					t.Fatal(err)
				}
				p.extra = []string{"--on-unrepresentable", name}
				psql(t, p.src, schema)
				p.mustDecant("init", "--create-tables")
				if strings.HasSuffix(policy, "!") {
					psql(t, p.src, workload)
					_, errOut, code := p.decant("run", "--catch-up")
					if code != 3 {
						t.Fatalf("run with policy %s: exit %d, want 3 (needs a person)\n%s", name, code, errOut)
					}
					oneLineError(t, "unrepresentable", errOut, "column ", "xid ", "commit ", "--on-unrepresentable")
					return
				}
				runScenario(t, p, workload)
			})
		}
	}
}

// runScenario streams the workload live, stops cleanly, catches up and
// compares.
func runScenario(t *testing.T, p *pair, workload string) {
	t.Helper()
	a := p.start()
	psql(t, p.src, workload)
	time.Sleep(200 * time.Millisecond)
	a.stop(t)
	p.catchUp()
}

func mustRead(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
