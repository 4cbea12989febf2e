package gaussstub

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/decant/decant/source"
)

// startCmd is a parsed START_REPLICATION command (spec §1.3, og repl_gram.y):
//
//	START_REPLICATION SLOT <ident> LOGICAL <hex>/<hex> [ ( <ident> ['<string>'] [, ...] ) ]
//
// <ident> is an unquoted identifier (down-cased) or a "double-quoted" one
// with "" for a quote; values are 'single-quoted' with ” for a quote, and
// may be omitted.
type startCmd struct {
	slot    string
	start   source.LSN
	options []option
}

type option struct {
	name  string
	value *string // nil when the value was omitted
}

func (o option) text() string {
	if o.value == nil {
		return "(null)"
	}
	return *o.value
}

type token struct {
	kind byte // 'i' bare identifier, 'q' quoted identifier, 's' string, 'l' LSN, or the punctuation itself
	text string
}

func parseStartReplication(q string) (startCmd, error) {
	toks, err := scanTokens(q)
	if err != nil {
		return startCmd{}, err
	}
	var cmd startCmd
	next := func() token {
		if len(toks) == 0 {
			return token{}
		}
		t := toks[0]
		toks = toks[1:]
		return t
	}
	keyword := func(kw string) error {
		if t := next(); t.kind != 'i' || !strings.EqualFold(t.text, kw) {
			return fmt.Errorf("syntax error: expected %s, got %q", kw, t.text)
		}
		return nil
	}
	ident := func(what string) (string, error) {
		switch t := next(); t.kind {
		case 'i':
			return strings.ToLower(t.text), nil
		case 'q':
			return t.text, nil
		default:
			return "", fmt.Errorf("syntax error: expected %s, got %q", what, t.text)
		}
	}
	for _, kw := range []string{"START_REPLICATION", "SLOT"} {
		if err := keyword(kw); err != nil {
			return cmd, err
		}
	}
	if cmd.slot, err = ident("a slot name"); err != nil {
		return cmd, err
	}
	if err := keyword("LOGICAL"); err != nil {
		return cmd, err
	}
	t := next()
	if t.kind != 'l' {
		return cmd, fmt.Errorf("syntax error: expected an X/X start position, got %q", t.text)
	}
	if cmd.start, err = source.ParseLSN(t.text); err != nil {
		return cmd, fmt.Errorf("syntax error: %w", err)
	}
	if len(toks) == 0 {
		return cmd, nil
	}
	if t := next(); t.kind != '(' {
		return cmd, fmt.Errorf("syntax error at or near %q", t.text)
	}
	for {
		name, err := ident("an option name")
		if err != nil {
			return cmd, err
		}
		o := option{name: name}
		if len(toks) > 0 && toks[0].kind == 's' {
			v := next().text
			o.value = &v
		}
		cmd.options = append(cmd.options, o)
		switch t := next(); t.kind {
		case ',':
		case ')':
			if len(toks) > 0 {
				return cmd, fmt.Errorf("syntax error at or near %q", toks[0].text)
			}
			return cmd, nil
		default:
			return cmd, fmt.Errorf("syntax error at or near %q", t.text)
		}
	}
}

func scanTokens(q string) ([]token, error) {
	var toks []token
	r := []rune(strings.TrimRight(strings.TrimSpace(q), ";"))
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '(' || c == ')' || c == ',':
			toks = append(toks, token{kind: byte(c), text: string(c)})
			i++
		case c == '"' || c == '\'':
			s, n, err := quoted(r[i:], c)
			if err != nil {
				return nil, err
			}
			kind := byte('q')
			if c == '\'' {
				kind = 's'
			}
			toks = append(toks, token{kind: kind, text: s})
			i += n
		default:
			j := i
			for j < len(r) && !unicode.IsSpace(r[j]) && !strings.ContainsRune(`(),"'`, r[j]) {
				j++
			}
			w := string(r[i:j])
			kind := byte('i')
			if strings.Contains(w, "/") {
				kind = 'l'
			}
			toks = append(toks, token{kind: kind, text: w})
			i = j
		}
	}
	return toks, nil
}

// quoted reads a quoted token starting at r[0] == q, with a doubled q as an
// escaped one; it returns the content and the runes consumed.
func quoted(r []rune, q rune) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(r); i++ {
		if r[i] != q {
			b.WriteRune(r[i])
			continue
		}
		if i+1 < len(r) && r[i+1] == q {
			b.WriteRune(q)
			i++
			continue
		}
		return b.String(), i + 1, nil
	}
	return "", 0, errors.New("syntax error: unterminated quoted string")
}

// Option rules, from docs/gaussdb-decoding.md §4 and openGauss's option
// parsers (an independent reading; this does not use decant's option code).
var (
	// serialOptions are what the serial plugin (mppdb_decoding) accepts.
	serialOptions = setOf("include-xids", "skip-empty-xacts", "include-timestamp", "only-local",
		"white-table-list", "white-table-list1", "white-table-list2", "white-table-list3", "white-table-list4",
		"white-table-list5", "white-table-list6", "white-table-list7", "white-table-list8", "white-table-list9",
		"max-txn-in-memory", "max-reorderbuffer-in-memory", "desc-memory-limit", "include-user",
		"exclude-userids", "exclude-users", "dynamic-resolution", "standby-connection", "sender-timeout",
		"enable-heartbeat", "parallel-decode-num", "output-order", "auto-advance", "skip-generated-columns",
		"enable-ddl-decoding", "enable-ddl-json-format", "timezone-is-utc", "decode-sequence",
		"enable-decode-position", "enable-rowno", "logical-receiver-num", "slice-id", "start-position",
		"force-binary", "include-originid")
	// parallelOnly are accepted only with parallel-decode-num > 1; the
	// serial parser reports them as unknown.
	parallelOnly = setOf("decode-style", "sending-batch", "parallel-queue-size", "max-logical-decode-memory",
		"change-log-max-len", "max-decode-to-sender-cache-num")
	boolOptions = setOf("include-xids", "skip-empty-xacts", "include-timestamp", "only-local",
		"include-user", "dynamic-resolution", "standby-connection", "enable-heartbeat", "auto-advance",
		"skip-generated-columns", "enable-ddl-decoding", "enable-ddl-json-format", "timezone-is-utc",
		"decode-sequence", "enable-decode-position", "enable-rowno", "force-binary", "include-originid")
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// sessionOptions are the options that shape what the stand-in sends.
type sessionOptions struct {
	parallel         bool
	style            byte // 'b', 'j', 't' (parallel) or 'm' (serial)
	batch            bool
	includeXids      bool
	includeTimestamp bool
	heartbeat        bool
	decodePosition   bool
	autoAdvance      bool
	outputOrder      int
}

// parallelDecodeNum reads only parallel-decode-num, as the walsender does
// before choosing the serial or the parallel path.
func (cmd startCmd) parallelDecodeNum() (int, error) {
	n := 1
	for _, o := range cmd.options {
		if o.name != "parallel-decode-num" || o.value == nil {
			continue
		}
		v, err := strconv.Atoi(strings.TrimSpace(*o.value))
		if err != nil || v < 1 || v > 20 {
			return 0, valueError(o)
		}
		n = v
	}
	return n, nil
}

func valueError(o option) error {
	return fmt.Errorf(`could not parse value "%s" for parameter "%s"`, o.text(), o.name)
}

// validate checks every option for the chosen path and the slot's kind,
// with the flavour's parser.
func (cmd startCmd) validate(fl *flavour, parallel, csnSlot bool) (sessionOptions, error) {
	so := sessionOptions{parallel: parallel, style: 'm', includeXids: true, includeTimestamp: !parallel}
	known := fl.serial
	if parallel {
		so.style = 'b'
		known = fl.parallel
	}
	for _, o := range cmd.options {
		if !known[o.name] {
			return so, fmt.Errorf(`option "%s" = "%s" is unknown`, o.name, o.text())
		}
		if boolOptions[o.name] {
			b, err := optionBool(o)
			if err != nil {
				return so, err
			}
			switch o.name {
			case "include-xids":
				so.includeXids = b
			case "include-timestamp":
				so.includeTimestamp = b
			case "enable-heartbeat":
				so.heartbeat = b
			case "enable-decode-position":
				so.decodePosition = b
			case "auto-advance":
				so.autoAdvance = b
			}
			continue
		}
		if o.value == nil {
			continue
		}
		v := *o.value
		switch o.name {
		case "decode-style":
			if v != "b" && v != "j" && v != "t" {
				return so, valueError(o)
			}
			so.style = v[0]
		case "sending-batch":
			if v != "0" && v != "1" {
				return so, valueError(o)
			}
			so.batch = v == "1"
		case "max-txn-in-memory", "max-reorderbuffer-in-memory":
			limit := memorySerialMax
			if parallel {
				limit = fl.memoryMax
			}
			if n, err := strconv.Atoi(v); err != nil || n < 0 || (limit > 0 && n > limit) {
				return so, valueError(o)
			}
		case "output-order":
			if v != "0" && v != "1" {
				return so, valueError(o)
			}
			so.outputOrder = int(v[0] - '0')
		}
	}
	if (so.outputOrder == 1) != csnSlot {
		kind := "an LSN-ordered"
		if csnSlot {
			kind = "a CSN-ordered"
		}
		return so, fmt.Errorf(`option "output-order" = "%d" does not match %s slot "%s"`, so.outputOrder, kind, cmd.slot)
	}
	return so, nil
}

// optionBool parses a boolean option as PostgreSQL's parse_bool does. A
// bare include-timestamp means false (openGauss's quirk); other bare
// booleans mean true.
func optionBool(o option) (bool, error) {
	if o.value == nil {
		return o.name != "include-timestamp", nil
	}
	switch v := strings.ToLower(strings.TrimSpace(*o.value)); v {
	case "t", "tr", "tru", "true", "y", "ye", "yes", "on", "1":
		return true, nil
	case "f", "fa", "fal", "fals", "false", "n", "no", "of", "off", "0":
		return false, nil
	}
	return false, valueError(o)
}
