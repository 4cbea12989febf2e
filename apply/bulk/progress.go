package bulk

import (
	"bytes"
	"io"
	"sync"
	"time"

	"github.com/decant/decant/source"
)

// progress forwards to the caller's Progress, one call at a time; a nil
// Progress gets nothing.
type progress struct {
	mu sync.Mutex
	p  Progress
}

func (p *progress) planned(table source.TableName, rows, bytes int64) {
	if p.p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.p.Planned(table, rows, bytes)
}

func (p *progress) copied(table source.TableName, rows, bytes int64) {
	if p.p == nil || rows == 0 && bytes == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.p.Copied(table, rows, bytes)
}

func (p *progress) done(table source.TableName) {
	if p.p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.p.Done(table)
}

// Report at least this often while a task streams.
const (
	reportBytes = 64 << 10
	reportEvery = time.Second
)

// meter counts the COPY data of one task on its way from the source and
// reports it every reportBytes or reportEvery. With lines set (text
// format) every newline ends a row: COPY text escapes the newlines inside
// values.
type meter struct {
	w     io.Writer
	prog  *progress
	table source.TableName
	lines bool

	rows, bytes         int64 // counted
	sentRows, sentBytes int64 // reported
	last                time.Time
}

func newMeter(w io.Writer, prog *progress, table source.TableName, lines bool) *meter {
	return &meter{w: w, prog: prog, table: table, lines: lines, last: time.Now()}
}

func (m *meter) Write(b []byte) (int, error) {
	m.bytes += int64(len(b))
	if m.lines {
		m.rows += int64(bytes.Count(b, []byte{'\n'}))
	}
	if m.bytes-m.sentBytes >= reportBytes || time.Since(m.last) >= reportEvery {
		m.report()
	}
	return m.w.Write(b)
}

func (m *meter) report() {
	m.prog.copied(m.table, m.rows-m.sentRows, m.bytes-m.sentBytes)
	m.sentRows, m.sentBytes, m.last = m.rows, m.bytes, time.Now()
}

// finish reports what is left, rows being the task's count from the
// target.
func (m *meter) finish(rows int64) {
	m.rows = rows
	m.report()
}
