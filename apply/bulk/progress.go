package bulk

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
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

func newMeter(prog *progress, table source.TableName, lines bool) *meter {
	return &meter{prog: prog, table: table, lines: lines, last: time.Now()}
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

// errTargetStopped ends the source's COPY when the target side has stopped
// reading.
var errTargetStopped = errors.New("the target stopped reading")

// copyOut runs a source COPY ... TO STDOUT and returns its data as a
// reader, counted by m on the way. pgconn writes each row as it arrives;
// a buffer between it and the pipe hands the reader 256 KiB at a time
// rather than one row per goroutine switch. The caller must call finish
// once it stops reading: it ends the COPY if still running and returns
// the source's error.
func copyOut(ctx context.Context, src *srcSession, query string, m *meter) (r io.Reader, finish func() error) {
	pr, pw := io.Pipe()
	m.w = bufio.NewWriterSize(pw, 256<<10)
	done := make(chan error, 1)
	go func() {
		_, err := src.conn.PgConn().CopyTo(ctx, m, query)
		if err == nil {
			err = m.w.(*bufio.Writer).Flush()
		}
		pw.CloseWithError(err) // nil: the reader gets EOF
		done <- err
	}()
	return pr, func() error {
		pr.CloseWithError(errTargetStopped)
		if err := <-done; err != nil && !errors.Is(err, errTargetStopped) {
			return fmt.Errorf("read the source: %w", err)
		}
		return nil
	}
}
