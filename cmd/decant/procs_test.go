package main

import (
	"os"
	"runtime"
	"testing"
)

// --procs sets GOMAXPROCS; GOMAXPROCS in the environment wins over the
// flag's default, not over the flag given.
func TestLimitProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cases := []struct {
		env  string // "": unset
		n    int
		set  bool
		want int
	}{
		{"", 1, false, 1},
		{"", 3, true, 3},
		{"", 0, true, runtime.NumCPU()},
		{"5", 1, false, 5}, // the environment's, as the runtime read it
		{"5", 2, true, 2},
	}
	for _, c := range cases {
		if c.env != "" {
			t.Setenv("GOMAXPROCS", c.env)
			runtime.GOMAXPROCS(5) // what the runtime takes from it at start
		} else {
			t.Setenv("GOMAXPROCS", "")
			if err := os.Unsetenv("GOMAXPROCS"); err != nil {
				t.Fatal(err)
			}
		}
		limitProcs(c.n, c.set)
		if got := runtime.GOMAXPROCS(0); got != c.want {
			t.Errorf("GOMAXPROCS=%q, --procs %d (given: %v): GOMAXPROCS %d, want %d", c.env, c.n, c.set, got, c.want)
		}
	}
}
