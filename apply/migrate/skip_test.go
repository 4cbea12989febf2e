package migrate

import (
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

func TestJudgeSkipRequest(t *testing.T) {
	now := time.Now()
	cp := checkpoint.Row{End: 0x100}
	stop := checkpoint.Skip{Commit: 0x200, Xid: 7, Error: "apply insert at xid 7 commit 0/200: duplicate key", StoppedAt: now}
	pending := checkpoint.Skip{Commit: 0x300, RequestedAt: now}
	for _, tc := range []struct {
		name      string
		rows      []checkpoint.Skip
		commit    uint64
		xid       uint64
		refused   string
		wantXid   uint64
		wantError string
		elsewhere uint64
	}{
		{name: "at the stop", rows: []checkpoint.Skip{stop}, commit: 0x200, wantXid: 7, wantError: stop.Error},
		{name: "at the stop with its xid", rows: []checkpoint.Skip{stop}, commit: 0x200, xid: 7, wantXid: 7, wantError: stop.Error},
		{name: "at the stop with another xid", rows: []checkpoint.Skip{stop}, commit: 0x200, xid: 8, refused: "as xid 7, not 8"},
		{name: "elsewhere than the stop", rows: []checkpoint.Skip{stop}, commit: 0x280, elsewhere: 0x200},
		{name: "no stop recorded", commit: 0x200, xid: 9, wantXid: 9},
		{name: "applied already", rows: []checkpoint.Skip{stop}, commit: 0x80, refused: "already has it (pipeline p resumes at 0/100)"},
		{name: "another pending", rows: []checkpoint.Skip{pending}, commit: 0x200, refused: "skip of commit 0/300 is already pending"},
		{name: "the same pending again", rows: []checkpoint.Skip{pending}, commit: 0x300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := judgeSkipRequest("p", cp, tc.rows, source.LSN(tc.commit), tc.xid)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("err %v, want one saying %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.Xid != tc.wantXid || req.Error != tc.wantError || uint64(req.StoppedElsewhere) != tc.elsewhere || req.Resume != 0x100 {
				t.Errorf("request %+v, want xid %d, error %q, stopped elsewhere %x", req, tc.wantXid, tc.wantError, tc.elsewhere)
			}
		})
	}
}

func TestSkipStatus(t *testing.T) {
	now := time.Now()
	rows := []checkpoint.Skip{
		{Commit: 0x300, StoppedAt: now, RequestedAt: now, Error: "e"},
		{Commit: 0x50, StoppedAt: now, Error: "old stop, applied since"},
		{Commit: 0x40, Xid: 3, Tables: []string{"public.a"}, Changes: 2, RequestedAt: now, SkippedAt: now},
	}
	st := skipStatus(rows, checkpoint.Row{End: 0x100})
	if st.Pending == nil || st.Pending.CommitLSN != "0/300" || st.Pending.Error != "e" {
		t.Errorf("pending %+v, want 0/300 with its error", st.Pending)
	}
	if st.Stopped != nil {
		t.Errorf("stopped %+v: a stop behind the checkpoint is history", st.Stopped)
	}
	if len(st.Skipped) != 1 || st.Skipped[0].Changes != 2 || st.Skipped[0].Xid != 3 {
		t.Errorf("skipped %+v, want the one at 0/40", st.Skipped)
	}
}
