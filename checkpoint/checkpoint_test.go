package checkpoint

import (
	"errors"
	"testing"
	"time"

	"github.com/decant/decant/source"
)

func TestApplied(t *testing.T) {
	// Fresh row at a consistent point of 0/100: a commit exactly there is
	// new work.
	r := Row{Commit: 0x100, End: 0x100}
	for commit, want := range map[source.LSN]bool{0xFF: true, 0x100: false, 0x101: false} {
		if got, err := r.Applied(&source.Txn{Commit: commit}); got != want || err != nil {
			t.Errorf("fresh row: Applied(%s) = %v, want %v", commit, got, want)
		}
	}
	// After a transaction committed at 0/200 and ending at 0/228, it and
	// everything before it count as applied, the next commit does not.
	r = r.After(&source.Txn{Xid: 9, Commit: 0x200, CommitTime: time.Unix(1, 0)}, 0x228)
	if r.Commit != 0x200 || r.End != 0x228 || r.Xid != 9 {
		t.Fatalf("After: %+v", r)
	}
	for commit, want := range map[source.LSN]bool{0x200: true, 0x227: true, 0x228: false} {
		if got, err := r.Applied(&source.Txn{Commit: commit}); got != want || err != nil {
			t.Errorf("after 0/200: Applied(%s) = %v, want %v", commit, got, want)
		}
	}
	// An idle advance may have moved End past a later commit's end: After
	// never moves End backwards.
	r.End = 0x500
	if r = r.After(&source.Txn{Commit: 0x300}, 0x328); r.End != 0x500 {
		t.Errorf("After moved End back to %s", r.End)
	}
}

func TestAppliedByCSN(t *testing.T) {
	// A CSN-ordered source resumes by CSN; LSNs may go backwards.
	r := Row{End: 0x900, CSN: 2357}
	for csn, want := range map[uint64]bool{2356: true, 2357: true, 2358: false} {
		if got, err := r.Applied(&source.Txn{Commit: 0x100, CSN: csn, ByCSN: true}); got != want || err != nil {
			t.Errorf("Applied(CSN %d) = %v, %v, want %v", csn, got, err, want)
		}
	}
	// A transaction without a CSN cannot be placed: an error naming it,
	// not a skip (0 is below every stored CSN).
	_, err := r.Applied(&source.Txn{Xid: 77, Commit: 0x100, ByCSN: true})
	var missing *MissingCSNError
	if !errors.As(err, &missing) || missing.Xid != 77 {
		t.Errorf("Applied(no CSN) = %v, want a MissingCSNError for xid 77", err)
	}
	if r = r.After(&source.Txn{CSN: 2360, ByCSN: true}, 0x950); r.CSN != 2360 {
		t.Errorf("After kept CSN %d", r.CSN)
	}
}

func TestReached(t *testing.T) {
	for _, c := range []struct {
		row  Row
		goal source.Goal
		want bool
	}{
		{Row{End: 0x100}, source.Goal{LSN: 0x100}, true},
		{Row{End: 0xFF}, source.Goal{LSN: 0x100}, false},
		// By CSN: the goal is the next CSN when it was taken, so the
		// transaction just below it reaches it, and so does a decode
		// position at it (the pipeline stores one less).
		{Row{End: 0x900, CSN: 41}, source.Goal{CSN: 42}, true},
		{Row{End: 0x900, CSN: 40}, source.Goal{CSN: 42}, false},
		{Row{End: 0x900, CSN: 50}, source.Goal{CSN: 42}, true},
		// A CSN goal ignores how far the LSN went.
		{Row{End: 0xFFFF, CSN: 40}, source.Goal{LSN: 0x100, CSN: 42}, false},
	} {
		if got := c.row.Reached(c.goal); got != c.want {
			t.Errorf("Row{End %s, CSN %d}.Reached(%s) = %v, want %v", c.row.End, c.row.CSN, c.goal, got, c.want)
		}
	}
}

func TestPGAdvanceArgs(t *testing.T) {
	r := Row{Pipeline: "p", Commit: 0x1_0000_00A0, End: 0x1_0000_00C8, Xid: 42,
		CommitTime: time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.FixedZone("x", 3600))}
	got := r.PGAdvanceArgs()
	want := []string{"p", "1/A0", "1/C8", "42", "2024-05-06 06:08:09.123456Z", ""}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("arg %d = %q, want %q", i+1, got[i], want[i])
		}
	}
	// Before the first transaction xid and commit time are NULL.
	got = Row{Pipeline: "p", End: 5}.PGAdvanceArgs()
	if got[3] != nil || got[4] != nil {
		t.Errorf("xid and commit time should be NULL, got %q %q", got[3], got[4])
	}
}

func TestSchemaVersion(t *testing.T) {
	for comment, want := range map[string]int{"": 0, "decant checkpoint schema 3": 3, "decant checkpoint schema 12": 12, "something else": 0, "decant checkpoint schema x": 0} {
		if got := parseVersion(comment); got != want {
			t.Errorf("parseVersion(%q) = %d, want %d", comment, got, want)
		}
	}
	if err := checkVersion("t", SchemaVersion); err != nil {
		t.Errorf("the current version is refused: %v", err)
	}
	if err := checkVersion("t", SchemaVersion+1); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("a newer version is not refused: %v", err)
	}
}
