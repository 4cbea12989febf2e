package main

import (
	"context"
	"fmt"
	"strings"
)

// summaries say, per table, what checkTargets compares between the source
// and every target: aggregates written the same in PostgreSQL and MariaDB,
// over the columns the cases change.
var summaries = map[string]string{
	"bench":            "COUNT(*), COALESCE(SUM(n), 0), COALESCE(SUM(amount), 0)",
	"bench_marker":     "COUNT(*), COALESCE(SUM(id), 0)",
	"ins":              "COUNT(*), COALESCE(SUM(big), 0), COALESCE(SUM(amount), 0)",
	"updel":            "COUNT(*), COALESCE(SUM(big), 0), COALESCE(SUM(amount), 0)",
	"pgbench_accounts": "COUNT(*), COALESCE(SUM(abalance), 0)",
	"pgbench_branches": "COUNT(*), COALESCE(SUM(bbalance), 0)",
	"pgbench_tellers":  "COUNT(*), COALESCE(SUM(tbalance), 0)",
	"pgbench_history":  "COUNT(*), COALESCE(SUM(delta), 0)",
}

// checkTargets makes sure that, once every consumer has drained case c,
// each target holds what the source holds in the case's tables, so that
// no consumer was timed for doing less. The PostgreSQL targets are also
// compared row by row, through a sum of row hashes. The large case's
// bench_imm target holds only that case's rows and is left out.
func (b *bench) checkTargets(ctx context.Context, c benchCase) error {
	for _, t := range append([]string{"bench_marker"}, c.tables...) {
		sum, ok := summaries[t]
		if !ok {
			return fmt.Errorf("check: no summary for table %s", t)
		}
		pgSQL := fmt.Sprintf("SELECT concat_ws(' ', %s, COALESCE(SUM(hashtext(t::text)), 0)) FROM %s t", sum, t)
		want, err := queryText(ctx, b.srcDSN, pgSQL)
		if err != nil {
			return fmt.Errorf("check %s on the source: %w", t, err)
		}
		for _, db := range targetDBs() {
			got, err := queryText(ctx, b.tgt.DSN(db), pgSQL)
			if err != nil {
				return fmt.Errorf("check %s in %s: %w", t, db, err)
			}
			if got != want {
				return fmt.Errorf("table %s in target database %s differs from the source after the case: %s, want %s", t, db, got, want)
			}
		}
		myWant, err := queryText(ctx, b.srcDSN, fmt.Sprintf("SELECT concat_ws(' ', %s) FROM %s", sum, t))
		if err != nil {
			return err
		}
		got, err := b.my.Exec(ctx, "bench", fmt.Sprintf("SELECT CONCAT_WS(' ', %s) FROM %s", sum, t))
		if err != nil {
			return fmt.Errorf("check %s in MariaDB: %w", t, err)
		}
		if got = strings.TrimSpace(got); got != myWant {
			return fmt.Errorf("table %s in MariaDB differs from the source after the case: %s, want %s", t, got, myWant)
		}
	}
	return nil
}
