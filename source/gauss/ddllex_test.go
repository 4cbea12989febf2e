package gauss

import (
	"strings"
	"testing"
)

// lexCases are statement fragments and their tokens, as kind:value
// (w: bare word, q: quoted identifier, s: string, n: number, o: operator
// or punctuation, bad: what could not be read).
var lexCases = []struct{ src, want string }{
	{`CREATE  TABLE public."Odd ""Name"""`, `w:create w:table w:public o:. q:Odd "Name"`},
	{`a::pg_catalog.int4[]`, `w:a o::: w:pg_catalog o:. w:int4 o:[ o:]`},
	{`'it''s' E'a\'b' N'x' $$d'o$$ $t$x$$y$t$ $1`, `s:it's s:a'b s:x s:d'o s:x$$y o:$1`},
	{`1 1.5 .5e3 10e 2..3`, `n:1 n:1.5 n:.5e3 n:10 w:e n:2 o:. n:.3`},
	{"a -- comment\nb /* x /* nested */ y */ c", `w:a w:b w:c`},
	{`a<>b>=-1`, `w:a o:<> w:b o:>=- n:1`},
	{`a+--b`, `w:a o:+`},
	{`ÄbC "ÄbC"`, `w:Äbc q:ÄbC`},
	{`x 'open`, `w:x bad:an unterminated string`},
	{`x "open`, `w:x bad:an unterminated quoted identifier`},
	{`x ""`, `w:x bad:an empty quoted identifier`},
	{`x $a$ open`, `w:x bad:an unterminated dollar-quoted string`},
	{`x /* open`, `w:x bad:an unterminated comment`},
	{`a;;`, `w:a o:; o:;`},
}

func TestDDLLex(t *testing.T) {
	for _, tc := range lexCases {
		if got := showTokens(lexDDL(tc.src)); got != tc.want {
			t.Errorf("%s:\n got  %s\n want %s", tc.src, got, tc.want)
		}
		checkLex(t, tc.src)
	}
}

// showTokens writes tokens as kind:value, without the final tEOF.
func showTokens(toks []ddlToken) string {
	var out []string
	for _, tok := range toks {
		prefix := map[ddlTokKind]string{tIdent: "w:", tQuoted: "q:", tString: "s:", tNumber: "n:", tOp: "o:", tBad: "bad:"}[tok.kind]
		if tok.kind != tEOF {
			out = append(out, prefix+tok.val)
		}
	}
	return strings.Join(out, " ")
}

// FuzzLex: lexDDL never panics, and its tokens account for the whole
// input (checkLex). Seeds: the lexer's cases and the statements the
// parser and catalog tests use.
func FuzzLex(f *testing.F) {
	for _, tc := range lexCases {
		f.Add(tc.src)
	}
	for _, s := range ddlSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) { checkLex(t, src) })
}

// checkLex checks what lexDDL makes of src: tokens in order, each its
// own bytes, one tEOF at the end, a tBad only last and running to the
// end; between tokens nothing but white space and comments, so that the
// tokens joined keep all of the input's other content; and each token
// read alone gives itself back.
func checkLex(t *testing.T, src string) {
	t.Helper()
	toks := lexDDL(src)
	if n := len(toks); n == 0 || toks[n-1].kind != tEOF || toks[n-1].pos != len(src) || toks[n-1].end != len(src) {
		t.Fatalf("%q: does not end with tEOF at %d: %+v", src, len(src), toks)
	}
	last := 0
	for i, tok := range toks[:len(toks)-1] {
		text := src[min(tok.pos, len(src)):min(tok.end, len(src))]
		switch {
		case tok.kind == tEOF:
			t.Fatalf("%q: tEOF at token %d of %d", src, i, len(toks))
		case tok.pos < last || tok.end <= tok.pos || tok.end > len(src):
			t.Fatalf("%q: token %d %+v overlaps or leaves [%d, %d]", src, i, tok, last, len(src))
		case tok.kind == tBad && (i != len(toks)-2 || tok.end != len(src)):
			t.Fatalf("%q: %s at token %d does not run to the end", src, tok.val, i)
		case tok.kind == tIdent && tok.val != asciiLower(text),
			(tok.kind == tOp || tok.kind == tNumber) && tok.val != text:
			t.Fatalf("%q: token %d %q has value %q", src, i, text, tok.val)
		}
		if gap := src[last:tok.pos]; len(lexDDL(gap)) != 1 {
			t.Fatalf("%q: %q between tokens is not white space and comments", src, gap)
		}
		alone := lexDDL(text)
		if len(alone) != 2 || alone[0].kind != tok.kind || alone[0].val != tok.val || alone[0].end != len(text) {
			t.Fatalf("%q: token %q alone gives %+v, not %+v", src, text, alone, tok)
		}
		last = tok.end
	}
	if gap := src[last:]; len(lexDDL(gap)) != 1 {
		t.Fatalf("%q: %q after the last token is not white space and comments", src, gap)
	}
}
