package verify

import (
	"fmt"
	"strconv"
	"strings"
)

// Summary is the report in one line: tables, source rows, how many are
// equal and how many differ.
func (r *Report) Summary() string {
	var rows int64
	for _, t := range r.Tables {
		rows += t.SourceRows
	}
	diff := len(r.Differing())
	s := fmt.Sprintf("%d tables, %d source rows: %d equal, %d differ", len(r.Tables), rows, len(r.Tables)-diff, diff)
	if r.Rechecked {
		s += " (differing spans compared a second time)"
	}
	return s
}

// Err names the tables that differ; nil when none does.
func (r *Report) Err() error {
	diff := r.Differing()
	if len(diff) == 0 {
		return nil
	}
	names := make([]string, len(diff))
	for i, t := range diff {
		names[i] = t.Source
	}
	return fmt.Errorf("%d of %d tables differ: %s", len(diff), len(r.Tables), strings.Join(names, ", "))
}

// Lines describes a differing table: a headline, then one line per listed
// key and one per kind with more keys than listed. Keys are the only
// values it prints.
func (t TableReport) Lines() []string {
	head := t.Source + " -> " + t.Target + ": "
	switch {
	case t.Error != "":
		return []string{head + t.Error}
	case len(t.Key) == 0:
		return []string{head + fmt.Sprintf("%d rows on the source, %d on the target; the rows differ (no key: compared as a whole)", t.SourceRows, t.TargetRows)}
	}
	lines := []string{head + fmt.Sprintf("%d rows on the source, %d on the target; %d missing on the target, %d extra, %d different (%d of %d spans differ)",
		t.SourceRows, t.TargetRows, t.Missing, t.Extra, t.Different, t.DifferingSpans, t.Spans)}
	for _, l := range []struct {
		what  string
		keys  []Key
		count int64
	}{{"missing on the target", t.MissingKeys, t.Missing}, {"extra on the target", t.ExtraKeys, t.Extra}, {"different", t.DifferentKeys, t.Different}} {
		for _, k := range l.keys {
			lines = append(lines, l.what+": "+keyText(t.Key, k))
		}
		if more := l.count - int64(len(l.keys)); more > 0 {
			lines = append(lines, fmt.Sprintf("%s: %d more", l.what, more))
		}
	}
	return lines
}

// keyText prints a key as col=value pairs, quoting values that would be
// ambiguous.
func keyText(cols []string, k Key) string {
	parts := make([]string, len(k))
	for i, v := range k {
		if v == "" || strings.ContainsAny(v, " ,()=\"\n\t") {
			v = strconv.Quote(v)
		}
		name := "?"
		if i < len(cols) {
			name = cols[i]
		}
		parts[i] = name + "=" + v
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
