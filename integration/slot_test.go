package integration

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/integration/harness"
)

// Slot safety: decant never streams over a gap. Whatever happened to the
// slot (dropped, made again, invalidated), run stops with exit code 3
// and one line naming the slot, the positions and how to rebuild.

// TestSlotDropped: the slot was dropped while decant was stopped; run
// refuses, and the source's timeline, unchanged since the one recorded
// with the checkpoint, says that it was likely dropped (no failover).
func TestSlotDropped(t *testing.T) {
	p := newPair(t)
	p.both(opsSchema)
	p.mustDecant("init")
	psql(t, p.src, `INSERT INTO load (client, v) VALUES (1, 'applied')`)
	p.catchUp()
	if tl := queryValue(t, p.tgt, `SELECT coalesce(timeline::text, '') FROM decant.checkpoint WHERE pipeline = '`+p.name+`'`); tl != "1" {
		t.Fatalf("checkpoint records timeline %q, want the source's 1", tl)
	}
	psql(t, p.src, `SELECT pg_drop_replication_slot('`+p.name+`')`)
	_, errOut, code := p.decant("run", "--catch-up")
	if code != 3 {
		t.Errorf("run on a dropped slot: exit %d, want 3", code)
	}
	oneLineError(t, "dropped slot", errOut, "slot "+p.name+" does not exist", "checkpoint is "+p.checkpointEnd(),
		"recorded on timeline 1", "still on timeline 1", "likely dropped", "decant resync --pipeline "+p.name+" --yes")
}

// TestSlotRecreatedWhileRunning: someone ends the running decant's
// walsender, drops the slot and makes a new one of the same name before
// decant reconnects. The new slot starts past the checkpoint: the
// reconnect (or the side check, every 200 ms here) stops the run.
func TestSlotRecreatedWhileRunning(t *testing.T) {
	p := newPair(t)
	p.both(opsSchema)
	p.mustDecant("init")
	a := p.start("--slot-check-interval", "200ms")
	psql(t, p.src, `INSERT INTO load (client, v) VALUES (1, 'applied')`)
	xid := finalMarker(t, p.src)
	waitFor(t, 60*time.Second, func() bool { return p.checkpointXid() == xid || a.exited() })
	if a.exited() {
		t.Fatalf("decant run ended early: %v\n%s", a.err, a.stderr.String())
	}
	psql(t, p.src, `SELECT pg_terminate_backend(active_pid, 10000) FROM pg_replication_slots WHERE slot_name = '`+p.name+`';
SELECT pg_drop_replication_slot('`+p.name+`');
SELECT pg_create_logical_replication_slot('`+p.name+`', 'pgoutput');
INSERT INTO load (client, v) VALUES (2, 'after the new slot');`)
	select {
	case <-a.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("decant run still runs on a slot made again\n%s", a.stderr.String())
	}
	if code := exitCode(a.err); code != 3 {
		t.Errorf("run on a slot made again: exit %d (%v), want 3\n%s", code, a.err, a.stderr.String())
	}
	oneLineError(t, "slot made again", a.stderr.String(), "slot "+p.name+" confirmed", "but the target's checkpoint is", "decant resync --pipeline "+p.name+" --yes")
}

// TestSlotInvalidated: on a source that keeps at most 16 MB of WAL for a
// slot, WAL written while decant is stopped first leaves the slot
// unreserved (run warns, and catches up), then, after a checkpoint on
// the source, invalidated: run refuses with the lost-slot error.
func TestSlotInvalidated(t *testing.T) {
	p := newPair(t)
	src := harness.PostgresT(t, harness.PostgresOptions{Settings: map[string]string{"max_slot_wal_keep_size": "16MB"}})
	if err := src.CreateDatabase(t.Context(), p.name); err != nil {
		t.Fatal(err)
	}
	p.src = src.DSN(p.name)
	p.both(opsSchema)
	p.mustDecant("init")
	psql(t, p.src, `INSERT INTO load (client, v) VALUES (1, 'applied')`)
	p.catchUp()

	walStatus := func() string {
		return queryValue(t, p.src, `SELECT coalesce(wal_status, '') FROM pg_replication_slots WHERE slot_name = '`+p.name+`'`)
	}
	// Each round writes a little and switches to a new 16 MB segment.
	writeWAL := func(checkpoint bool) {
		sql := `INSERT INTO load (client, v) VALUES (3, 'wal'); SELECT pg_switch_wal();`
		if checkpoint {
			sql += ` CHECKPOINT;`
		}
		psql(t, p.src, sql)
	}
	for i := 0; walStatus() != "unreserved"; i++ {
		if i == 10 {
			t.Fatalf("wal_status %q after %d segments, want unreserved", walStatus(), i)
		}
		writeWAL(false)
	}
	out := p.mustDecant("run", "--catch-up")
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "wal_status unreserved") || !strings.Contains(out, "slot="+p.name) {
		t.Errorf("run on an unreserved slot gave no warning:\n%s", out)
	}
	p.assertEqual()

	invalidate := func() {
		for i := 0; walStatus() != "lost"; i++ {
			if i == 20 {
				t.Fatalf("wal_status %q after %d segments and checkpoints, want lost", walStatus(), i)
			}
			writeWAL(true)
		}
	}
	invalidate()
	_, errOut, code := p.decant("run", "--catch-up")
	if code != 3 {
		t.Errorf("run on an invalidated slot: exit %d, want 3", code)
	}
	oneLineError(t, "invalidated slot", errOut, "slot "+p.name+" was invalidated", "wal_status lost", "checkpoint is "+p.checkpointEnd(), "decant resync --pipeline "+p.name+" --yes")

	// The way back: resync repairs the target (the rows written since
	// the slot last streamed) from a new slot, and run streams on.
	p.mustDecant("resync", "--yes")
	p.assertEqual()
	psql(t, p.src, `INSERT INTO load (client, v) VALUES (4, 'after the resync'); DELETE FROM load WHERE client = 3 AND id % 2 = 0`)
	p.catchUp()

	// Invalidated again, run --on-slot-lost resync does the same by
	// itself and catches up.
	invalidate()
	psql(t, p.src, `UPDATE load SET v = 'while lost' WHERE client = 3`)
	out = p.mustDecant("run", "--catch-up", "--on-slot-lost", "resync")
	for _, want := range []string{"slot " + p.name + " was invalidated", "level=WARN msg=\"resync done"} {
		if !strings.Contains(out, want) {
			t.Errorf("run --on-slot-lost resync on an invalidated slot: output lacks %q:\n%s", want, out)
		}
	}
	p.assertEqual()
	if got := walStatus(); got != "reserved" {
		t.Errorf("wal_status of the new slot %q, want reserved", got)
	}
}

// exitCode is the exit code of a finished command's error (0 for nil).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestCheckpointTimelineUpgrade: a checkpoint table made by a decant
// without the timeline column gains it at the next run, which records the
// source's timeline there, on either target.
func TestCheckpointTimelineUpgrade(t *testing.T) {
	for _, mysql := range []bool{false, true} {
		t.Run(map[bool]string{false: "postgres", true: "mariadb"}[mysql], func(t *testing.T) {
			p := newTargetPair(t, mysql)
			psql(t, p.src, opsSchema)
			if mysql {
				p.myExec("CREATE TABLE `load` (id bigint PRIMARY KEY, client integer, v text)")
				p.myExec(`CREATE TABLE marker (id integer PRIMARY KEY, xid text)`)
			} else {
				psql(t, p.tgt, opsSchema)
			}
			p.mustDecant("init")
			// The table as a decant before schema versions made it: no
			// timeline column, no version comment.
			var tl, version func() string
			if mysql {
				p.myExec(`ALTER TABLE decant_checkpoint DROP COLUMN timeline, COMMENT = ''`)
				tl = func() string {
					return p.myValue(`SELECT timeline FROM decant_checkpoint WHERE pipeline = '` + p.name + `'`)
				}
				version = func() string {
					return p.myValue(`SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'decant_checkpoint'`)
				}
			} else {
				psql(t, p.tgt, `ALTER TABLE decant.checkpoint DROP COLUMN timeline; COMMENT ON TABLE decant.checkpoint IS NULL`)
				tl = func() string {
					return queryValue(t, p.tgt, `SELECT coalesce(timeline::text, '') FROM decant.checkpoint WHERE pipeline = '`+p.name+`'`)
				}
				version = func() string {
					return queryValue(t, p.tgt, `SELECT coalesce(obj_description('decant.checkpoint'::regclass, 'pg_class'), '')`)
				}
			}
			psql(t, p.src, `INSERT INTO load (client, v) VALUES (1, 'applied')`)
			p.catchUp()
			if got := tl(); got != "1" {
				t.Errorf("timeline after the upgrade: %q, want 1", got)
			}
			if got, want := version(), fmt.Sprintf("decant checkpoint schema %d", checkpoint.SchemaVersion); got != want {
				t.Errorf("version after the upgrade: %q, want %q", got, want)
			}

			// A table from a newer decant is refused, by run and status,
			// with what to do.
			if mysql {
				p.myExec(`ALTER TABLE decant_checkpoint COMMENT = 'decant checkpoint schema 99'`)
			} else {
				psql(t, p.tgt, `COMMENT ON TABLE decant.checkpoint IS 'decant checkpoint schema 99'`)
			}
			for _, args := range [][]string{{"status"}, {"run", "--catch-up"}} {
				_, errOut, code := p.decant(args...)
				if code != 1 || !strings.Contains(errOut, "schema version 99") || !strings.Contains(errOut, "run the decant that wrote it") {
					t.Errorf("decant %s on a newer checkpoint table: exit %d, %q", args[0], code, errOut)
				}
			}
		})
	}
}
