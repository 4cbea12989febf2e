package gauss

import "testing"

func TestKindString(t *testing.T) {
	want := []string{"", "begin", "commit", "insert", "update", "delete", "truncate", "ddl", "heartbeat", "position"}
	for k := KindBegin; k <= KindPosition; k++ {
		if k.String() != want[k] {
			t.Errorf("%d: %q", k, k.String())
		}
	}
	if Kind(42).String() != "kind(42)" {
		t.Errorf("%q", Kind(42).String())
	}
}

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch bool
		want  Format
		str   string
	}{
		{"gauss-b", false, Format{Style: 'b'}, "gauss-b"},
		{"gauss-b", true, Format{Style: 'b', Batch: true}, "gauss-b+batch"},
		{"gauss-j", false, Format{Style: 'j'}, "gauss-j"},
		{"gauss-t", true, Format{Style: 't', Batch: true}, "gauss-t+batch"},
		{"mppdb", false, Format{Style: 'm'}, "mppdb"},
	} {
		f, err := ParseFormat(tc.name, tc.batch)
		if err != nil || f != tc.want || f.String() != tc.str {
			t.Errorf("ParseFormat(%q, %v) = %+v %q, %v", tc.name, tc.batch, f, f.String(), err)
		}
	}
	for _, bad := range []struct {
		name  string
		batch bool
	}{{"mppdb", true}, {"gauss-x", false}, {"", false}, {"pgoutput", false}} {
		if f, err := ParseFormat(bad.name, bad.batch); err == nil {
			t.Errorf("ParseFormat(%q, %v) = %v, want an error", bad.name, bad.batch, f)
		}
	}
}
