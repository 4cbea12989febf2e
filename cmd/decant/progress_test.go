package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/source"
)

// Off a terminal the copy's progress is log lines: one per table every
// interval while it copies, one when it is done, none with row values.
func TestCopyProgressLogLines(t *testing.T) {
	var buf bytes.Buffer
	p := newCopyProgress(slog.New(slog.NewTextHandler(&buf, nil)), nil)
	p.terminal = false // as off a terminal
	p.interval = 20 * time.Millisecond
	big := source.TableName{Schema: "public", Name: "big"}
	p.Planned(big, 1000, 1<<20)
	p.Copied(big, 100, 1000) // within the interval: no line
	time.Sleep(25 * time.Millisecond)
	p.Copied(big, 100, 1000)
	p.Planned(big, 1000, 1<<20) // a retry reports the table from the start
	p.Copied(big, 300, 3000)
	p.Done(big)
	p.Stopped()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a copying line and a done line, got:\n%s", buf.String())
	}
	for i, want := range []string{`msg=copying table=public.big rows=200 estimated_rows=1000`, `msg="table copied" table=public.big rows=300 MB=0.003`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s\nwant it to contain %s", i+1, lines[i], want)
		}
	}
}
