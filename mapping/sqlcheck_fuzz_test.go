package mapping

import (
	"strings"
	"testing"
)

// FuzzSQLCheck: the lexer and the checks never panic, the tokens lie in
// order inside the text with only white space between them, every ';'
// outside a string or quoted identifier is a token of its own, and text
// accepted as an expression has no ';' outside quotes, stays accepted in
// parentheses, and is refused with a statement after it.
func FuzzSQLCheck(f *testing.F) {
	for _, s := range []string{"nextval('s'::regclass)", "1); DROP TABLE x; --", `E'\''; x`, "$a$;$a$", "/* /* */ */",
		`"a""b"`, "CREATE INDEX i ON public.t USING btree (a) WHERE (b > 0)", "numeric(10,2)[]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = typeProblem(s)
		_ = indexProblem(checkTable, "i", s)
		toks, reason := lexSQL(s)
		if reason != "" {
			if exprProblem(s) == "" {
				t.Fatalf("%q: accepted though it does not lex (%s)", s, reason)
			}
			return
		}
		checkTokenSpans(t, s, toks)
		if exprProblem(s) != "" {
			return
		}
		for _, tok := range toks {
			if tok.kind != sqlString && tok.kind != sqlQuoted && strings.Contains(s[tok.pos:tok.end], ";") {
				t.Fatalf("%q: accepted with a ';' outside quotes", s)
			}
		}
		if r := exprProblem("(" + s + ")"); r != "" {
			t.Fatalf("%q: accepted, but not in parentheses (%s)", s, r)
		}
		if exprProblem(s+"; SELECT 1") == "" || exprProblem(s+"\n; SELECT 1") == "" {
			t.Fatalf("%q: accepted with a statement after it", s)
		}
	})
}

// checkTokenSpans checks that toks cover s in order, with only white
// space between them, and that each quoted token begins and ends with its
// quote.
func checkTokenSpans(t *testing.T, s string, toks []sqlToken) {
	t.Helper()
	at := 0
	for _, tok := range toks {
		if tok.pos < at || tok.end <= tok.pos || tok.end > len(s) || strings.TrimSpace(s[at:tok.pos]) != "" {
			t.Fatalf("%q: token at %d..%d after %d", s, tok.pos, tok.end, at)
		}
		text := s[tok.pos:tok.end]
		switch {
		case tok.kind == sqlQuoted && !strings.HasSuffix(text, `"`),
			tok.kind == sqlString && !strings.HasSuffix(text, "'") && !strings.HasSuffix(text, "$"):
			t.Fatalf("%q: quoted token %q does not end with its quote", s, text)
		case tok.kind == sqlOp && tok.val == ";" && text != ";":
			t.Fatalf("%q: ';' token %q", s, text)
		}
		at = tok.end
	}
	if strings.TrimSpace(s[at:]) != "" {
		t.Fatalf("%q: text after the last token", s)
	}
}
