package verify

import (
	"slices"
	"testing"
)

func TestReportText(t *testing.T) {
	rep := &Report{Rechecked: true, Tables: []TableReport{
		{Source: "public.a", Target: "public.a", Equal: true, SourceRows: 10, TargetRows: 10},
		{Source: "public.b", Target: "b", Key: []string{"id", "k"}, SourceRows: 5, TargetRows: 4,
			Spans: 2, DifferingSpans: 1, Missing: 3, Different: 1,
			MissingKeys: []Key{{"1", "x y"}, {"2", ""}}, DifferentKeys: []Key{{"7", "z"}}},
		{Source: "public.c", Target: "public.c", SourceRows: 2, TargetRows: 3},
		{Source: "public.d", Target: "public.d", Error: "target table public.d is missing"},
	}}
	if got, want := rep.Summary(), "4 tables, 17 source rows: 1 equal, 3 differ (differing spans compared a second time)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if err := rep.Err(); err == nil || err.Error() != "3 of 4 tables differ: public.b, public.c, public.d" {
		t.Errorf("error %v", err)
	}
	wantB := []string{
		"public.b -> b: 5 rows on the source, 4 on the target; 3 missing on the target, 0 extra, 1 different (1 of 2 spans differ)",
		`missing on the target: (id=1, k="x y")`,
		`missing on the target: (id=2, k="")`,
		"missing on the target: 1 more",
		"different: (id=7, k=z)",
	}
	if got := rep.Tables[1].Lines(); !slices.Equal(got, wantB) {
		t.Errorf("keyed table lines:\n%q\nwant\n%q", got, wantB)
	}
	if got := rep.Tables[2].Lines(); len(got) != 1 || got[0] != "public.c -> public.c: 2 rows on the source, 3 on the target; the rows differ (no key: compared as a whole)" {
		t.Errorf("keyless table lines: %q", got)
	}
	if got := rep.Tables[3].Lines(); len(got) != 1 || got[0] != "public.d -> public.d: target table public.d is missing" {
		t.Errorf("failed table lines: %q", got)
	}
	if got := keyText([]string{"id"}, Key{"a=b", "extra"}); got != `(id="a=b", ?=extra)` {
		t.Errorf("key with more values than columns: %s", got)
	}
	if err := (&Report{Tables: rep.Tables[:1]}).Err(); err != nil {
		t.Errorf("equal report: %v", err)
	}
}
