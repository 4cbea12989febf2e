package integration

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestCrashRecovery is the exactly-once proof: `decant run` is SIGKILLed at
// random moments while 4 clients commit thousands of mixed transactions,
// and restarted each time. After a final `run --catch-up` the target must
// hold exactly the source's rows (a replayed insert into the keyless table
// would show as a duplicate) and the checkpoint must name the last commit.
func TestCrashRecovery(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		p := newPair(t)
		p.both(mixedSchema)
		p.mustDecant("init")
		crashTest(t, p)
	})
	t.Run("mariadb", func(t *testing.T) {
		p := newMySQLPair(t)
		psql(t, p.src, mixedSchema)
		p.mustDecant("init", "--create-tables")
		crashTest(t, p)
	})
}

func crashTest(t *testing.T, p *pair) {
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := workload(t, p.src, 4, 1500)
		done <- result{n, err}
	}()

	rng := rand.New(rand.NewPCG(7, 7))
	var res *result
	kills, advanced := 0, 0
	last := p.checkpointEnd()
	for res == nil || kills < 10 {
		a := p.start()
		time.Sleep(time.Duration(150+rng.IntN(1200)) * time.Millisecond)
		a.kill()
		kills++
		if end := p.checkpointEnd(); end != last {
			advanced, last = advanced+1, end
		}
		if out := a.stderr.String(); strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
			t.Fatalf("decant run crashed by itself:\n%s", out)
		}
		if res == nil {
			select {
			case r := <-done:
				res = &r
			default:
			}
		}
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if advanced < 5 {
		t.Fatalf("the checkpoint moved during only %d of %d runs: the kills did not interrupt real work", advanced, kills)
	}
	if res.n < 5000 {
		t.Fatalf("only %d transactions committed; the workload is too small to prove anything", res.n)
	}
	xid := finalMarker(t, p.src)
	p.catchUp()
	if got := p.checkpointXid(); got != xid {
		t.Errorf("checkpoint names xid %s, want the last commit's xid %s", got, xid)
	}
	t.Logf("%d transactions committed, decant killed %d times, %d of the runs applied work", res.n, kills, advanced)
}
