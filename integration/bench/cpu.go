package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/decant/decant/integration/harness"
)

// Source, target and consumer share the machine's cores, so what each
// consumer costs the servers is reported next to its wall time: the CPU
// seconds the source cluster, the target server and the consumer process
// itself used over the timed interval.

// userHZ is the unit of the times in /proc/PID/stat (USER_HZ, 100 on
// Linux whatever the kernel's own tick).
const userHZ = 100

// proc is what /proc/PID/stat says of a process: its parent, its own CPU
// time and that of the children it has reaped.
type proc struct {
	ppid         int
	self, reaped time.Duration
}

// procStat reads /proc/PID/stat.
func procStat(pid int) (proc, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, err
	}
	// The command name (field 2) may hold spaces: count fields after it.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 15 {
		return proc{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	var ticks [4]int64 // utime, stime, cutime, cstime: fields 14-17
	for i := range ticks {
		if ticks[i], err = strconv.ParseInt(f[11+i], 10, 64); err != nil {
			return proc{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
	}
	ppid, err := strconv.Atoi(f[1])
	tick := time.Second / userHZ
	return proc{ppid, time.Duration(ticks[0]+ticks[1]) * tick, time.Duration(ticks[2]+ticks[3]) * tick}, err
}

// peakRSS is a running process's VmHWM from /proc/PID/status, in KiB: its
// resident set's high-water mark so far.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
}

// procs reads every process's stat once: the CPU of several server trees
// comes from one pass over /proc.
func procs() (map[int]proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	all := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := procStat(pid); err == nil { // it may have ended meanwhile
			all[pid] = p
		}
	}
	return all, nil
}

// treeCPU is the CPU time a server has used so far: its main process,
// the children it reaped (PostgreSQL's ended backends) and those still
// running (backends, walsenders, the apply worker). An ended child not
// yet reaped is a zombie whose stat still holds its time, so a reading
// misses nothing except a child reaped between the reading of the main
// process and that of the child: meter.exited waits for a consumer's
// sessions to be reaped before it reads.
func treeCPU(all map[int]proc, pid int) (time.Duration, error) {
	root, ok := all[pid]
	if !ok {
		return 0, fmt.Errorf("server process %d is gone", pid)
	}
	total := root.self + root.reaped
	for child, p := range all {
		if p.ppid == pid && child != pid {
			total += p.self
		}
	}
	return total, nil
}

// pidFile reads a server's pid from the first line of a file in its data
// directory (postmaster.pid, or MariaDB's pid).
func pidFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// servers is the CPU time used so far by each server of the bench.
type servers struct{ src, tgt, my time.Duration }

// serverPIDs reads the three servers' main pids.
func (b *bench) serverPIDs() (src, tgt, my int, err error) {
	if src, err = pidFile(filepath.Join(b.src.Dir, "postmaster.pid")); err != nil {
		return
	}
	if tgt, err = pidFile(filepath.Join(b.tgt.Dir, "postmaster.pid")); err != nil {
		return
	}
	my, err = pidFile(filepath.Join(b.my.Dir, "pid"))
	return
}

func (b *bench) serverCPU() (servers, error) {
	var s servers
	srcPID, tgtPID, myPID, err := b.serverPIDs()
	if err != nil {
		return s, err
	}
	all, err := procs()
	if err != nil {
		return s, err
	}
	if s.src, err = treeCPU(all, srcPID); err != nil {
		return s, err
	}
	if s.tgt, err = treeCPU(all, tgtPID); err != nil {
		return s, err
	}
	// mariadbd does not fork: its stat sums all its threads.
	s.my, err = treeCPU(all, myPID)
	return s, err
}

// pgChildren is the set of the two PostgreSQL clusters' child processes.
func (b *bench) pgChildren() (map[int]bool, error) {
	srcPID, tgtPID, _, err := b.serverPIDs()
	if err != nil {
		return nil, err
	}
	all, err := procs()
	if err != nil {
		return nil, err
	}
	kids := map[int]bool{}
	for pid, p := range all {
		if p.ppid == srcPID || p.ppid == tgtPID {
			kids[pid] = true
		}
	}
	return kids, nil
}

// waitReaped waits until every child of the clusters that is not in
// before has been reaped, so that its CPU time sits in its postmaster's
// reaped total (a session ends some milliseconds after its client).
func (b *bench) waitReaped(ctx context.Context, before map[int]bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		now, err := b.pgChildren()
		if err != nil {
			return err
		}
		left := 0
		for pid := range now {
			if !before[pid] {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d server processes started during the timed interval still run 10 s after it", left)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// quietWindow, quietShare and settleLimit say when settle calls the
// servers quiet: each used under 5% of a core over the last 500 ms,
// waited for 60 s at most.
const (
	quietWindow = 500 * time.Millisecond
	quietShare  = 0.05
	settleLimit = 60 * time.Second
)

// settle brings the servers to rest before a timed interval. With
// autovacuum off, what loading and the previous consumer leave behind is
// dirty shared buffers, which the checkpointer and the background writer
// would write out whenever they got to it, and InnoDB's purge and page
// flushing: a CHECKPOINT on both PostgreSQL clusters writes the buffers
// now, and waiting until every server's process tree is quiet lets the
// rest finish, so that none of it lands in the next consumer's wall time
// or CPU columns. MariaDB has no CHECKPOINT statement; its background
// work is waited out by the quiet test alone.
func (b *bench) settle(ctx context.Context) error {
	start := time.Now()
	for _, p := range []*harness.Postgres{b.src, b.tgt} {
		if err := execSQL(ctx, p.DSN("postgres"), "CHECKPOINT"); err != nil {
			return fmt.Errorf("settle: %w", err)
		}
	}
	prev, err := b.serverCPU()
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quietWindow):
		}
		cur, err := b.serverCPU()
		if err != nil {
			return err
		}
		busy := max(cur.src-prev.src, cur.tgt-prev.tgt, cur.my-prev.my)
		if float64(busy) < quietShare*float64(quietWindow) {
			if d := time.Since(start); d > 2*time.Second {
				fmt.Fprintf(os.Stderr, "settled in %.1f s\n", d.Seconds())
			}
			return nil
		}
		if time.Since(start) > settleLimit {
			fmt.Fprintf(os.Stderr, "warning: a server still used %.0f%% of a core after %s of settling; timing anyway\n",
				100*busy.Seconds()/quietWindow.Seconds(), settleLimit)
			return nil
		}
		prev = cur
	}
}

func seconds(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf("%.1f", d.Seconds())
}
