package verify

import (
	"math"
	"reflect"
	"testing"
)

func TestEvenCuts(t *testing.T) {
	for _, c := range []struct {
		lo, hi, n int64
		want      [][]string
	}{
		{1, 100, 4, [][]string{{"26"}, {"51"}, {"76"}}},
		{1, 10, 3, [][]string{{"5"}, {"9"}}},
		{5, 5, 10, nil},
		{1, 3, 10, [][]string{{"2"}, {"3"}}},
		{0, 100, 1, nil},
		{math.MinInt64, math.MaxInt64, 2, [][]string{{"0"}}},
	} {
		if got := evenCuts(c.lo, c.hi, c.n); !reflect.DeepEqual(got, c.want) {
			t.Errorf("evenCuts(%d, %d, %d) = %v, want %v", c.lo, c.hi, c.n, got, c.want)
		}
	}
}

func TestEstimateRows(t *testing.T) {
	for _, c := range []struct {
		tuples          float64
		pages, nowPages int64
		want            int64
		known           bool
	}{
		{-1, 0, 10, 0, false},
		{1000, 10, 20, 2000, true},
		{0, 0, 0, 0, true},
		{0, 0, 5, 0, false},
	} {
		if got, known := estimateRows(c.tuples, c.pages, c.nowPages); got != c.want || known != c.known {
			t.Errorf("estimateRows(%v, %d, %d) = %d, %v; want %d, %v", c.tuples, c.pages, c.nowPages, got, known, c.want, c.known)
		}
	}
}

// TestSumStats: checksums pay for the first sumTrial spans, then only
// while at most 3 in 4 of them differed.
func TestSumStats(t *testing.T) {
	var s sumStats
	for i := 0; i < sumTrial; i++ {
		if !s.pay() {
			t.Fatalf("checksum %d does not pay before the trial is over", i)
		}
		s.tried()
		s.differed()
	}
	if s.pay() {
		t.Error("checksums pay after every one differed")
	}
	var m sumStats
	for i := 0; i < sumTrial; i++ {
		m.tried()
		if i%2 == 0 {
			m.differed()
		}
	}
	if !m.pay() {
		t.Error("checksums do not pay when half of them found equal spans")
	}
}
