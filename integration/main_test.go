// Package integration runs decant end to end against real PostgreSQL 15
// servers that the harness starts and stops: the decant binary is built
// once and driven through its CLI, as users and other tools drive it.
package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/decant/decant/integration/harness"
)

var (
	decantBin string
	sourcePG  *harness.Postgres // shared source cluster; each test gets its own database
	targetPG  *harness.Postgres // shared target cluster
	targetMy  *harness.MariaDB  // shared MariaDB target
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "decant-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if decantBin, err = harness.BuildDecant(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if sourcePG, err = harness.StartPostgres(ctx, harness.PostgresOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sourcePG.Remove()
	if targetPG, err = harness.StartPostgres(ctx, harness.PostgresOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer targetPG.Remove()
	if targetMy, err = harness.StartMariaDB(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer targetMy.Remove()
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "source log:\n%s\ntarget log:\n%s\nmariadb log:\n%s\n", sourcePG.LogTail(40), targetPG.LogTail(40), targetMy.LogTail(20))
	}
	return code
}
