package main

import (
	"testing"
	"time"
)

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 80000: "80,000", 1000000: "1,000,000", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSelectCases(t *testing.T) {
	all := cases(1000000, 2000000, 1000000)
	picked, err := selectCases(all, defaultCases)
	if err != nil || len(picked) != len(all) {
		t.Fatalf("default cases: %d of %d picked, err %v", len(picked), len(all), err)
	}
	for _, only := range []string{"pgbench", "insert1m", "updel", "large", "copy"} {
		if picked, err := selectCases(all, only); err != nil || len(picked) != 1 {
			t.Errorf("-only %s: %d picked, err %v", only, len(picked), err)
		}
	}
	if _, err := selectCases(all, "update"); err == nil {
		t.Error("-only update without insert: no error")
	}
	if _, err := selectCases(all, "nosuch"); err == nil {
		t.Error("-only nosuch: no error")
	}
}

func TestSyscallCost(t *testing.T) {
	d, err := syscallCost()
	if err != nil {
		t.Fatal(err)
	}
	// Tens of nanoseconds on bare metal, about a microsecond on this
	// machine's virtual CPUs; a millisecond would be no system call's.
	t.Logf("a system call that does nothing: %v", d)
	if d <= 0 || d > time.Millisecond {
		t.Errorf("syscallCost() = %v", d)
	}
}
