package apply

import (
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

func TestParseConflictRule(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want ConflictRule
		err  string
	}{
		{spec: "insert_exists=skip", want: ConflictRule{InsertExists, PolicySkip}},
		{spec: "insert_exists=apply", want: ConflictRule{InsertExists, PolicyApply}},
		{spec: "update_missing=apply", want: ConflictRule{UpdateMissing, PolicyApply}},
		{spec: " delete_missing = skip ", want: ConflictRule{DeleteMissing, PolicySkip}},
		{spec: "update_differs=error", want: ConflictRule{UpdateDiffers, PolicyError}},
		{spec: "delete_differs=skip", want: ConflictRule{DeleteDiffers, PolicySkip}},
		{spec: "insert_exists", err: "is not KIND=POLICY"},
		{spec: "insert_exist=skip", err: `unknown conflict kind "insert_exist"`},
		{spec: "insert_exists=ignore", err: `unknown conflict policy "ignore" for insert_exists`},
		{spec: "delete_missing=apply", err: "delete_missing takes error or skip"},
		{spec: "update_differs=apply", err: "update_differs takes error or skip"},
	} {
		got, err := ParseConflictRule(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.spec, got, err, tc.want)
		}
	}
}

func TestConflictPoliciesPerTable(t *testing.T) {
	items := source.TableName{Schema: "public", Name: "items"}
	other := source.TableName{Schema: "public", Name: "other"}
	var c ConflictPolicies
	if c.Any() || c.Resolves(items) {
		t.Fatal("the zero policies resolve something")
	}
	c.Set(source.TableName{}, []ConflictRule{{DeleteMissing, PolicySkip}})
	c.Set(items, []ConflictRule{{InsertExists, PolicyApply}, {DeleteMissing, PolicyError}})
	if got := c.Of(items); got[InsertExists] != PolicyApply || got[DeleteMissing] != PolicyError || got[UpdateMissing] != PolicyError {
		t.Errorf("items: %v", got)
	}
	if got := c.Of(other); got[DeleteMissing] != PolicySkip || got[InsertExists] != PolicyError {
		t.Errorf("other: %v", got)
	}
	if !c.Any() || !c.Resolves(other) || !c.Resolves(items) {
		t.Error("policies other than error not seen")
	}
	var off ConflictPolicies
	off.Set(items, []ConflictRule{{InsertExists, PolicyError}})
	if off.Any() || off.Resolves(items) {
		t.Error("error everywhere counts as resolving")
	}
}

func TestConflictTallyEach(t *testing.T) {
	var tally ConflictTally
	tally[UpdateMissing][PolicyApply] = 2
	tally[DeleteMissing][PolicySkip] = 1
	var got []string
	tally.Each(func(k ConflictKind, p ConflictPolicy, n int64) {
		got = append(got, k.String()+"="+p.String()+":"+string(rune('0'+n)))
	})
	if strings.Join(got, ",") != "update_missing=apply:2,delete_missing=skip:1" {
		t.Errorf("Each: %v", got)
	}
}
