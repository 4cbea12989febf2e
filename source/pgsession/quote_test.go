package pgsession

import (
	"testing"

	"github.com/decant/decant/source"
)

func TestQuoteIdent(t *testing.T) {
	for in, want := range map[string]string{
		"t":          `"t"`,
		"Mixed Case": `"Mixed Case"`,
		`a"b`:        `"a""b"`,
		`""`:         `""""""`,
		"":           `""`,
		"a\x00b":     "\"a\x00b\"",
		"ünï":        `"ünï"`,
	} {
		if got := QuoteIdent(in); got != want {
			t.Errorf("QuoteIdent(%q) = %s, want %s", in, got, want)
		}
	}
	if got, want := QuoteTable(source.TableName{Schema: "my schema", Name: `t"1`}), `"my schema"."t""1"`; got != want {
		t.Errorf("QuoteTable = %s, want %s", got, want)
	}
}
