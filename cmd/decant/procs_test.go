package main

import (
	"os"
	"runtime"
	"testing"
)

// --procs sets GOMAXPROCS (0: the runtime's default); GOMAXPROCS in the
// environment wins over the flag's default, not over the flag given;
// migrate (0, not given) leaves GOMAXPROCS alone.
func TestLimitProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0) // the runtime's default here
	cases := []struct {
		env  string // "": unset
		n    int
		set  bool
		want int
	}{
		{"", 1, false, 1},
		{"", 3, true, 3},
		{"", 0, true, def},
		{"", 0, false, 7},  // migrate: what the runtime has (7, set below)
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
			runtime.GOMAXPROCS(7)
		}
		limitProcs(c.n, c.set)
		if got := runtime.GOMAXPROCS(0); got != c.want {
			t.Errorf("GOMAXPROCS=%q, --procs %d (given: %v): GOMAXPROCS %d, want %d", c.env, c.n, c.set, got, c.want)
		}
	}
}
