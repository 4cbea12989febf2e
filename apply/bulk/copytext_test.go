package bulk

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestCopyDecoder(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	in := "1\tplain\t\\N\n" +
		"2\t\t\\\\N\n" + // an empty value and the text \N
		"3\ttab\\there\\nnew\\rret\\\\back\tb\\bf\\fv\\v\n" +
		"4\t\\101\\0\\x41\\x4a\\xg\\q\t\\1234\n" +
		"5\t" + long + "\tend\n"
	want := [][]any{
		{"1", "plain", nil},
		{"2", "", `\N`},
		{"3", "tab\there\nnew\rret\\back", "b\bf\fv\v"},
		{"4", "A\x00AJxgq", "S4"},
		{"5", long, "end"},
	}
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"bytewise": iotest.OneByteReader(strings.NewReader(in)),
	} {
		d := newCopyDecoder(r)
		for i, w := range want {
			row, err := d.next()
			if err != nil {
				t.Fatalf("%s row %d: %v", name, i, err)
			}
			if len(row) != len(w) {
				t.Fatalf("%s row %d: %d fields, want %d", name, i, len(row), len(w))
			}
			for k, f := range row {
				switch wv := w[k].(type) {
				case nil:
					if f != nil {
						t.Errorf("%s row %d field %d: %q, want NULL", name, i, k, f)
					}
				case string:
					if f == nil || string(f) != wv {
						t.Errorf("%s row %d field %d: %q, want %q", name, i, k, trunc(f), trunc([]byte(wv)))
					}
				}
			}
		}
		if _, err := d.next(); err != io.EOF {
			t.Errorf("%s: after the last row: %v, want io.EOF", name, err)
		}
	}
}

func trunc(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

func TestCopyDecoderTruncated(t *testing.T) {
	d := newCopyDecoder(strings.NewReader("1\ta\n2\tb"))
	if _, err := d.next(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.next(); !errors.Is(err, errTruncatedRow) {
		t.Errorf("got %v, want errTruncatedRow", err)
	}
	boom := errors.New("boom")
	d = newCopyDecoder(io.MultiReader(strings.NewReader("1\t"), iotest.ErrReader(boom)))
	if _, err := d.next(); !errors.Is(err, boom) {
		t.Errorf("got %v, want the reader's error", err)
	}
}

func TestAppendLoadText(t *testing.T) {
	for in, want := range map[string]string{
		"":              "",
		"plain":         "plain",
		`\N`:            `\\N`,
		"a\tb\nc\rd\\e": `a\tb\nc\rd\\e`,
		"nul\x00":       `nul\0`,
		"ünï":           "ünï",
	} {
		if got := string(appendLoadText(nil, in)); got != want {
			t.Errorf("string %q: %q, want %q", in, got, want)
		}
		if got := string(appendLoadText([]byte("x"), []byte(in))); got != "x"+want {
			t.Errorf("bytes %q: %q, want %q", in, got, "x"+want)
		}
	}
}

func TestAppendLoadRow(t *testing.T) {
	got, err := appendLoadRow(nil, []int{0, 1, 2, 3, 4, 5, 6}, []bool{false, false, false, true, true, false, false},
		[]any{int64(-5), 1.5, nil, []byte{0, 0xff}, "AB", "x\ty", true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "-5\t1.5\t\\N\t00ff\t4142\tx\\ty\t1\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := appendLoadRow(nil, []int{0}, []bool{false}, []any{struct{}{}}); err == nil {
		t.Error("no error for a value of unknown type")
	}
	if bytes.Contains(got, []byte("\n\n")) {
		t.Error("empty line")
	}
}
