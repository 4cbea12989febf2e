package integration

import (
	"fmt"
	"strings"
	"testing"
)

// csnFormats are the parallel formats a CSN-ordered slot runs in here,
// with the decode positions its catch-up goal needs.
var csnFormats = func() []struct {
	name    string
	options []string
} {
	var out []struct {
		name    string
		options []string
	}
	for _, f := range gaussFormats {
		if f.options != nil { // the parallel ones
			out = append(out, struct {
				name    string
				options []string
			}{f.name, append(append([]string(nil), f.options...), "output-order=1")})
		}
	}
	return out
}()

// mixedWork runs the mixed workload (clients × txns) on a fresh source,
// captured as GaussDB transactions.
func mixedWork(t *testing.T, clients, txns int) (*pair, captured) {
	t.Helper()
	p := newPair(t)
	p.both(mixedSchema)
	work := captureWorkload(t, p, "accounts, events, batches, marker", func() {
		if _, err := workload(t, p.src, clients, txns); err != nil {
			t.Fatal(err)
		}
		finalMarker(t, p.src)
	})
	return p, work
}

// targetOf is a fresh target with the mixed schema, compared against p's
// source.
func targetOf(t *testing.T, p *pair) *pair {
	t.Helper()
	q := newPair(t)
	psql(t, q.tgt, mixedSchema)
	q.src = p.src
	return q
}

// TestGaussCSNCatchUpPastWAL: on a CSN-ordered slot, WAL written after the
// last replicated commit (a commit to a table outside white-table-list,
// which takes a CSN, and WAL no transaction ends at, as a checkpoint
// writes) before the run takes its goal must not leave the catch-up
// waiting for a log end no commit reaches. In every parallel format, run
// --catch-up exits 0 with every transaction applied, its checkpoint at the
// decode position it asked for, and says its goal by CSN.
func TestGaussCSNCatchUpPastWAL(t *testing.T) {
	p, work := mixedWork(t, 2, 40)
	last := work.txns[len(work.txns)-1]
	for _, f := range csnFormats {
		t.Run(f.name, func(t *testing.T) {
			q := targetOf(t, p)
			srv := startStandIn(t, "7300000000000000029")
			g := gaussPair(t, q, srv, f.options)
			g.mustDecant("init")
			srv.Append(work.txns...)
			unlisted := srv.CommitUnlisted()
			srv.AddWAL(0x4000)
			out := g.mustDecant("run", "--catch-up")
			if !strings.Contains(out, fmt.Sprintf("goal=\"CSN %d\"", unlisted+1)) {
				t.Errorf("the run did not take its goal at the next CSN, %d:\n%s", unlisted+1, out)
			}
			q.assertEqual()
			if got := q.checkpointXid(); got != fmt.Sprint(last.Xid) {
				t.Errorf("checkpoint names xid %s, want the last transaction's %d", got, last.Xid)
			}
			// The decode position behind the unlisted commit moved the
			// checkpoint past its CSN: the slot does not hold it.
			if got := queryValue(t, q.tgt, `SELECT commit_csn::text FROM decant.checkpoint WHERE pipeline = '`+q.name+`'`); got != fmt.Sprint(unlisted) {
				t.Errorf("checkpoint CSN %s, want %d (the unlisted commit's, below the decode position)", got, unlisted)
			}
			// A second run has nothing to do and must know it at once.
			g.mustDecant("run", "--catch-up")
			q.assertEqual()
		})
	}
}

// TestGaussCSNCatchUpNeedsPositions: without decode positions a CSN slot's
// catch-up has no goal it can prove; it says so and how to fix it.
func TestGaussCSNCatchUpNeedsPositions(t *testing.T) {
	p := newPair(t)
	psql(t, p.tgt, `CREATE TABLE t (id integer PRIMARY KEY);`)
	srv := startStandIn(t, "7300000000000000030")
	g := gaussPair(t, p, srv, []string{"parallel-decode-num=2", "decode-style=b", "output-order=1"})
	g.mustDecant("init")
	_, errOut, code := g.decant("run", "--catch-up")
	if code == 0 {
		t.Fatalf("a CSN-ordered catch-up without decode positions exited 0")
	}
	oneLineError(t, "CSN catch-up without positions", errOut, "enable-decode-position=true", "CSN-ordered")
}

// TestGaussCSNCutover: cutover from a CSN-ordered slot, with decant run
// applying and WAL after the last replicated commit, reaches its fence:
// the next CSN, with the decode position it requested behind it.
func TestGaussCSNCutover(t *testing.T) {
	p, work := mixedWork(t, 2, 40)
	q := targetOf(t, p)
	srv := startStandIn(t, "7300000000000000031")
	options := csnFormats[0].options
	g := gaussPair(t, q, srv, options)
	g.mustDecant("init")
	a := g.start()
	defer a.stop(t)
	srv.Append(work.txns...)
	unlisted := srv.CommitUnlisted()
	srv.AddWAL(0x4000)
	out := g.mustDecant(append([]string{"cutover", "--timeout", "2m"}, g.extra...)...)
	if !strings.Contains(out, fmt.Sprintf("CSN %d", unlisted+1)) {
		t.Errorf("cutover's fence is not the next CSN, %d:\n%s", unlisted+1, out)
	}
	q.assertEqual()
	_, errOut, code := g.decant(append([]string{"cutover", "--verify"}, g.extra...)...)
	if code != 2 {
		t.Errorf("cutover --verify from GaussDB: exit %d, want 2 (usage)", code)
	}
	oneLineError(t, "cutover --verify from GaussDB", errOut, "PostgreSQL source")
}
