package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Source, target and consumer share the machine's cores, so what each
// consumer costs the servers is reported next to its wall time: the CPU
// seconds the source cluster, the target server and the consumer process
// itself used over the timed interval.

// userHZ is the unit of the times in /proc/PID/stat (USER_HZ, 100 on
// Linux whatever the kernel's own tick).
const userHZ = 100

// procStat reads a process's parent and its CPU time, its own and that of
// its children it has reaped.
func procStat(pid int) (ppid int, self, reaped time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	// The command name (field 2) may hold spaces: count fields after it.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 15 {
		return 0, 0, 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	var ticks [4]int64 // utime, stime, cutime, cstime: fields 14-17
	for i := range ticks {
		if ticks[i], err = strconv.ParseInt(f[11+i], 10, 64); err != nil {
			return 0, 0, 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
	}
	ppid, err = strconv.Atoi(f[1])
	tick := time.Second / userHZ
	return ppid, time.Duration(ticks[0]+ticks[1]) * tick, time.Duration(ticks[2]+ticks[3]) * tick, err
}

// treeCPU is the CPU time a server has used so far: its main process,
// the children it reaped (PostgreSQL's ended backends) and those still
// running (backends, walsenders, the apply worker). A child reaped
// between the two readings is missed, so timeCPU lets the sessions of a
// consumer that just ended be reaped before it reads.
func treeCPU(pid int) (time.Duration, error) {
	_, self, reaped, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	total := self + reaped
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		if ppid, cpu, _, err := procStat(child); err == nil && ppid == pid {
			total += cpu
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

func (b *bench) serverCPU() (servers, error) {
	var s servers
	for _, srv := range []struct {
		pidPath string
		into    *time.Duration
	}{
		{filepath.Join(b.src.Dir, "postmaster.pid"), &s.src},
		{filepath.Join(b.tgt.Dir, "postmaster.pid"), &s.tgt},
		{filepath.Join(b.my.Dir, "pid"), &s.my},
	} {
		pid, err := pidFile(srv.pidPath)
		if err != nil {
			return s, err
		}
		if *srv.into, err = treeCPU(pid); err != nil {
			return s, err
		}
	}
	return s, nil
}

func seconds(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf("%.1f", d.Seconds())
}
