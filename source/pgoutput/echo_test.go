package pgoutput

import (
	"context"
	"testing"
)

// Only a decant pipeline whose slot is on the target loops back; each
// pipeline is looked up once, its extra sessions' origins (.N) with it.
func TestEchoes(t *testing.T) {
	var asked []string
	e := echoes{targetHasSlot: func(_ context.Context, slot string) (bool, error) {
		asked = append(asked, slot)
		return slot == "fwd", nil
	}}
	for _, c := range []struct {
		origin string
		echo   bool
	}{
		{"decant_fwd", true}, {"decant_fwd.3", true}, {"decant_chain", false}, {"decant_chain.1", false},
		{"pg_16384", false}, {"", false},
	} {
		got, err := e.echo(context.Background(), c.origin)
		if err != nil || got != c.echo {
			t.Errorf("origin %q: echo %v (%v), want %v", c.origin, got, err, c.echo)
		}
	}
	if len(asked) != 2 || asked[0] != "fwd" || asked[1] != "chain" {
		t.Errorf("slots looked up %v, want fwd and chain once each", asked)
	}
	if got, _ := (&echoes{}).echo(context.Background(), "decant_fwd"); got {
		t.Error("a reader without a way to look at the target skipped a transaction")
	}
}
