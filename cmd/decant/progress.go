package main

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/decant/decant/apply/bulk"
	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/apply/verify"
	"github.com/decant/decant/source"
)

// copyProgress shows the initial copy: a bar per table (rows, bytes,
// rate, ETA) when stderr is a terminal, otherwise a log line per table
// every few seconds while it copies, and one when it is done; and at the
// end a line on stdout with the totals.
type copyProgress struct {
	log      *slog.Logger
	interval time.Duration
	terminal bool // draw bars, on stderr

	// also, when set, hears every call too (the metrics of the copy).
	also bulk.Progress

	mu     sync.Mutex
	bars   *mpb.Progress // made with the first bar
	tables map[source.TableName]*tableProgress
}

var _ migrate.CopyProgress = (*copyProgress)(nil)

type tableProgress struct {
	name                    string
	rows                    atomic.Int64 // read by the bar's decorator
	bytes                   int64
	estRows                 int64
	estBytes                int64
	started, last, reported time.Time
	bar                     *mpb.Bar
}

func newCopyProgress(log *slog.Logger, also bulk.Progress) *copyProgress {
	p := &copyProgress{log: log, interval: 5 * time.Second, also: also, tables: map[source.TableName]*tableProgress{}}
	// Bars need a terminal with a width (a pty nobody sized has none, and
	// mpb would draw nothing there).
	if w, _, err := term.GetSize(int(os.Stderr.Fd())); err == nil && w > 0 {
		p.terminal = true
	}
	return p
}

// Planned registers a table with the source's size estimates.
func (p *copyProgress) Planned(table source.TableName, rows, bytes int64) {
	if p.also != nil {
		p.also.Planned(table, rows, bytes)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.tables[table]; t != nil {
		// Copy was called again (a retry): it reports every table again
		// from the start, done tasks included.
		t.rows.Store(0)
		t.bytes = 0
		if t.bar != nil && !t.bar.Completed() {
			t.bar.SetCurrent(0)
		}
		return
	}
	now := time.Now()
	t := &tableProgress{name: table.String(), estRows: rows, estBytes: max(bytes, 1), started: now, last: now, reported: now}
	p.tables[table] = t
	if p.terminal {
		if p.bars == nil {
			p.bars = mpb.New(mpb.WithOutput(os.Stderr), mpb.WithWidth(32), mpb.WithRefreshRate(200*time.Millisecond))
		}
		t.bar = p.bars.New(t.estBytes, mpb.BarStyle(),
			mpb.PrependDecorators(decor.Name(t.name, decor.WCSyncSpaceR), decor.Any(func(decor.Statistics) string {
				return fmt.Sprintf("%d rows", t.rows.Load())
			}, decor.WCSyncSpace)),
			mpb.AppendDecorators(decor.Counters(decor.SizeB1024(0), "% .1f / % .1f", decor.WCSyncSpace),
				decor.AverageSpeed(decor.SizeB1024(0), "% .1f", decor.WCSyncSpace),
				decor.OnComplete(decor.AverageETA(decor.ET_STYLE_MMSS, decor.WCSyncSpace), "done")))
	}
}

// Copied adds what a worker copied. The bar is updated after the lock is
// released: mpb renders from its own goroutine.
func (p *copyProgress) Copied(table source.TableName, rows, bytes int64) {
	if p.also != nil {
		p.also.Copied(table, rows, bytes)
	}
	p.mu.Lock()
	t := p.tables[table]
	if t == nil {
		p.mu.Unlock()
		return
	}
	rowsNow := t.rows.Add(rows)
	t.bytes += bytes
	grow := int64(0)
	if t.bytes > t.estBytes { // the estimate was low: grow the bar
		t.estBytes = t.bytes + t.bytes/10
		grow = t.estBytes
	}
	now := time.Now()
	since := now.Sub(t.last)
	t.last = now
	report := t.bar == nil && now.Sub(t.reported) >= p.interval
	if report {
		t.reported = now
	}
	bytesNow, secs := t.bytes, now.Sub(t.started).Seconds()
	p.mu.Unlock()
	if t.bar != nil && !t.bar.Completed() {
		if grow > 0 {
			t.bar.SetTotal(grow, false)
		}
		t.bar.EwmaIncrInt64(bytes, since)
	}
	if report {
		p.log.Info("copying", "table", t.name, "rows", rowsNow, "estimated_rows", t.estRows,
			"MB", float64(bytesNow)/1e6, "MB_per_s", float64(bytesNow)/1e6/max(secs, 0.001))
	}
}

// Done marks a table copied.
func (p *copyProgress) Done(table source.TableName) {
	if p.also != nil {
		p.also.Done(table)
	}
	p.mu.Lock()
	t := p.tables[table]
	var bytes int64
	if t != nil {
		bytes = t.bytes
	}
	p.mu.Unlock()
	if t == nil {
		return
	}
	if t.bar != nil {
		t.bar.SetTotal(-1, true)
		return
	}
	p.log.Info("table copied", "table", t.name, "rows", t.rows.Load(), "MB", float64(bytes)/1e6,
		"seconds", time.Since(t.started).Seconds())
}

// Stopped lets the bars draw their last state.
func (p *copyProgress) Stopped() {
	if p.bars != nil {
		p.bars.Wait()
	}
}

// Finished prints the copy's totals.
func (p *copyProgress) Finished(res bulk.Result, asOf source.LSN) {
	fmt.Printf("copied %d tables, %d rows (%.1f MB) in %.1fs as of %s\n", res.Tables, res.Rows, float64(res.Bytes)/1e6, res.Elapsed.Seconds(), asOf)
}

// resyncProgress logs a resync's progress: a line per table compared
// every interval, and one when a table is done.
type resyncProgress struct {
	log      *slog.Logger
	interval time.Duration
	mu       sync.Mutex
	tables   map[source.TableName]*resyncTable
}

var _ verify.Progress = (*resyncProgress)(nil)

type resyncTable struct {
	rows, estRows     int64
	started, reported time.Time
}

func newResyncProgress(log *slog.Logger) *resyncProgress {
	return &resyncProgress{log: log, interval: 5 * time.Second, tables: map[source.TableName]*resyncTable{}}
}

func (p *resyncProgress) Planned(table source.TableName, rows, _ int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.tables[table] = &resyncTable{estRows: rows, started: now, reported: now}
}

func (p *resyncProgress) Copied(table source.TableName, rows, _ int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.tables[table]
	if t == nil {
		return
	}
	t.rows += rows
	if now := time.Now(); now.Sub(t.reported) >= p.interval {
		t.reported = now
		p.log.Info("comparing and repairing", "table", table.String(), "rows", t.rows, "source_rows", t.estRows)
	}
}

func (p *resyncProgress) Done(table source.TableName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.tables[table]; t != nil {
		p.log.Info("table resynced", "table", table.String(), "rows", t.rows, "seconds", time.Since(t.started).Seconds())
	}
}
