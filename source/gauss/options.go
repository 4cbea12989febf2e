package gauss

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/decant/decant/source"
)

// The decoding options of GaussDB's "逻辑解码选项" (seed
// 000_f471de31bdf083ae) and of gaussdb-decoding.md §4, checked on the client
// before START_REPLICATION so a mistake is reported by name instead of as a
// server error that, in serial decoding, only arrives after copy-both mode
// has begun (§1.3). decant only streams, so options of SQL-function
// decoding are refused rather than silently ignored.

// optKind is the type of an option's value.
type optKind uint8

const (
	optBool   optKind = iota + 1 // true/false/on/off/1/0/yes/no, sent as true/false
	optInt                       // decimal, sent in canonical form
	optString                    // sent as given
	optChar                      // one letter
)

func (k optKind) String() string {
	switch k {
	case optBool:
		return "bool"
	case optInt:
		return "int"
	case optString:
		return "string"
	case optChar:
		return "char"
	}
	return "unknown"
}

// optModes is where an option takes effect.
type optModes uint8

const (
	inSerial   optModes = 1 << iota // streaming with parallel-decode-num = 1
	inParallel                      // streaming with parallel-decode-num > 1
	inSQL                           // pg_logical_slot_*_changes, pg_logical_get_area_changes
	inCN                            // GaussDB distributed decoding through a CN

	inStream = inSerial | inParallel | inCN
	inAll    = inStream | inSQL
)

// optPolicy is what ParseOptions does with an option beyond checking its value.
type optPolicy uint8

const (
	policyPass      optPolicy = iota // validated, then sent
	policyParallel                   // refused unless parallel-decode-num > 1 (§4 rule 3)
	policySerial                     // refused when parallel-decode-num > 1
	policyCSN                        // refused unless output-order = 1 (§4 rule 8)
	policyGUC                        // refused: only logical_decode_options_default sets it (§4 rule 4)
	policyNotStream                  // refused: SQL-function decoding only, or meaningless on a stream
)

// optSpec describes one decoding option.
type optSpec struct {
	name     string
	kind     optKind
	min, max int64  // range of an int
	parMax   int64  // upper bound in parallel decoding, when it differs from max
	chars    string // the letters a char may be
	check    func(string) bool
	rule     string // what check (or the range) wants, in words, when the generic text would not do
	modes    optModes
	policy   optPolicy
	refusal  string // why a policyNotStream option is refused
}

// optSpecs lists every option GaussDB or openGauss documents, in the seed's
// order (white-table-list1 … white-table-list9 last). docs/gaussdb.md has a
// table of the same names; options_test.go keeps the two in step.
var optSpecs = append([]optSpec{
	{name: "include-xids", kind: optBool, modes: inAll},
	{name: "skip-empty-xacts", kind: optBool, modes: inAll},
	{name: "include-timestamp", kind: optBool, modes: inAll},
	{name: "only-local", kind: optBool, modes: inAll},
	{name: "white-table-list", kind: optString, check: validTableList, rule: tableListRule, modes: inAll},
	// Serial (both servers) and openGauss parallel: 0..100 MB (openGauss
	// logical.cpp ParseDecodingOptionPlugin, parallel_decode_worker.cpp
	// ParseDecodingOption). GaussDB parallel: up to a quarter of
	// max_process_memory (seed), which decant cannot see from here; the
	// openGauss bound is applied by CheckServer once connected.
	{name: "max-txn-in-memory", kind: optInt, min: 0, max: 100, parMax: math.MaxInt32, modes: inAll},
	// GB. Deprecated and without effect in GaussDB parallel decoding (seed;
	// a warning); openGauss's parallel decoding honours it, 0..100
	// (parallel_reorderbuffer.cpp spills a transaction past it).
	{name: "max-reorderbuffer-in-memory", kind: optInt, min: 0, max: 100, parMax: math.MaxInt32, modes: inAll},
	{name: "desc-memory-limit", kind: optInt, min: 10, max: 1048576, modes: inAll},
	{name: "include-user", kind: optBool, modes: inAll},
	{name: "exclude-userids", kind: optString, check: validOIDList, rule: "must be a comma-separated list of user OIDs (decimal numbers from 1 to 4294967295)", modes: inSerial | inParallel | inSQL},
	{name: "exclude-users", kind: optString, check: validNameList, rule: "must be a comma-separated list of user names without empty entries", modes: inAll},
	{name: "dynamic-resolution", kind: optBool, modes: inAll},
	{name: "standby-connection", kind: optBool, modes: inSerial | inParallel},
	{name: "sender-timeout", kind: optInt, min: 0, max: math.MaxInt32, modes: inStream},
	{name: "change-log-max-len", kind: optInt, min: 1, max: 65535, modes: inParallel},
	{name: "max-decode-to-sender-cache-num", kind: optInt, min: 1, max: 65535, modes: inParallel},
	{name: "enable-heartbeat", kind: optBool, modes: inStream},
	{name: "parallel-decode-num", kind: optInt, min: 1, max: 20, modes: inStream},
	{name: "output-order", kind: optInt, min: 0, max: 1, rule: "must be 0 or 1", modes: inStream},
	{name: "auto-advance", kind: optBool, modes: inStream},
	{name: "skip-generated-columns", kind: optBool, modes: inSerial | inParallel | inSQL},
	{name: "enable-ddl-decoding", kind: optBool, modes: inAll},
	{name: "enable-ddl-json-format", kind: optBool, modes: inAll},
	{name: "timezone-is-utc", kind: optBool, modes: inStream},
	{name: "decode-sequence", kind: optBool, check: func(v string) bool { return v == "false" },
		rule: "must be false: the server refuses true (sequence changes cannot be decoded)", modes: inAll},
	{name: "enable-decode-position", kind: optBool, modes: inStream},
	{name: "data-limit", kind: optInt, min: 0, max: 100, modes: inSQL, policy: policyNotStream,
		refusal: "only for pg_logical_get_area_changes (SQL-function decoding, with the GUC logical_decode_options_default), not for streaming"},
	{name: "enable-rowno", kind: optBool, modes: inAll},
	{name: "enable-cn-decode", kind: optBool, policy: policyGUC},
	// Distributed strongly consistent decoding: only with output-order = 1.
	{name: "logical-receiver-num", kind: optInt, min: 1, max: 20, modes: inCN, policy: policyCSN},
	{name: "slice-id", kind: optInt, min: 0, max: 8192, modes: inSerial | inParallel, policy: policyCSN},
	{name: "start-position", kind: optString, check: validStartPosition,
		rule:  "must be CSN/LSN: two unsigned decimal integers separated by '/' (e.g. 2357/217996416)",
		modes: inSerial | inParallel, policy: policyCSN},
	// Serial decoding. Both servers take it on a stream, where it does
	// nothing (openGauss logical.cpp ParseDecodingOptionPlugin only sets
	// the output type, which only the SQL functions check); openGauss's
	// parallel parser does not know it.
	{name: "force-binary", kind: optBool, modes: inSerial | inSQL, policy: policySerial},
	// Parallel decoding.
	{name: "decode-style", kind: optChar, chars: "bjt", rule: "must be one of b, j, t", modes: inParallel | inCN, policy: policyParallel},
	{name: "sending-batch", kind: optInt, min: 0, max: 1, rule: "must be 0 or 1", modes: inParallel | inCN, policy: policyParallel},
	{name: "parallel-queue-size", kind: optInt, min: 2, max: 1024, check: isPowerOfTwo, rule: "must be a power of two from 2 to 1024", modes: inParallel | inCN, policy: policyParallel},
	{name: "max-logical-decode-memory", kind: optInt, min: 6, max: 1024, modes: inParallel, policy: policyParallel},
	{name: "max-control-memory-size", kind: optInt, min: 6, max: 1024, policy: policyGUC},
	{name: "max-toast-memory-size", kind: optInt, min: 100, max: 1048576, policy: policyGUC},
	{name: "max-queue-cache-num", kind: optInt, min: 8192, max: 65535, policy: policyGUC},
	// openGauss only (the ORIGIN_ID / 'O' tag); not in the GaussDB seed.
	{name: "include-originid", kind: optBool, modes: inSerial | inParallel | inSQL},
}, extraTableLists()...)

// extraTableLists gives white-table-list1 … white-table-list9: streaming
// only, GaussDB only, same syntax as white-table-list.
func extraTableLists() []optSpec {
	out := make([]optSpec, 0, 9)
	for i := 1; i <= 9; i++ {
		out = append(out, optSpec{name: "white-table-list" + strconv.Itoa(i), kind: optString,
			check: validTableList, rule: tableListRule, modes: inStream})
	}
	return out
}

func lookupOption(name string) (*optSpec, bool) {
	for i := range optSpecs {
		if optSpecs[i].name == name {
			return &optSpecs[i], true
		}
	}
	return nil, false
}

// Options are the decoding options of one GaussDB stream, validated. The
// zero value sends nothing and reports GaussDB's serial defaults.
type Options struct {
	values   map[string]string // what START_REPLICATION sends, normalised
	warnings []string
}

// ParseOptions validates user options (name → value as given in config or
// flags) and fills decant's own defaults where the user set nothing:
// include-xids, include-timestamp and skip-empty-xacts true; parallel-decode-num
// 1, and in parallel decoding decode-style b and sending-batch 0, so the
// stream's format never depends on the slot's plugin or the server's GUC
// logical_decode_options_default; and white-table-list from tables (decant's
// --tables list) unless a white-table-list option is set.
//
// Booleans are sent as true/false and integers in canonical decimal (the
// server would read "010" as octal). Every rejection names the option, the
// value and the rule; all of them are returned, joined.
func ParseOptions(user map[string]string, tables string) (Options, error) {
	names := make([]string, 0, len(user))
	for name := range user {
		names = append(names, name)
	}
	slices.Sort(names)

	st := optStreamOf(user)
	o := Options{values: make(map[string]string, len(user)+8)}
	var errs []error
	for _, name := range names {
		opt, ok := lookupOption(name)
		if !ok {
			errs = append(errs, unknownOptionError(name, user[name]))
			continue
		}
		v, err := opt.accept(user[name], st)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o.values[name] = v
	}
	if len(errs) > 0 {
		return Options{}, errors.Join(errs...)
	}

	if err := o.fillDefaults(tables); err != nil {
		return Options{}, err
	}
	o.warnings = o.findWarnings()
	return o, nil
}

// optStream is what the rest of the checks depend on: serial or parallel, LSN
// or CSN order. A flag is only known when its option parsed.
type optStream struct {
	parallel, parallelKnown bool
	csn, csnKnown           bool
}

func optStreamOf(user map[string]string) optStream {
	st := optStream{parallelKnown: true, csnKnown: true}
	if v, ok := user["parallel-decode-num"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		st.parallelKnown = err == nil && n >= 1 && n <= 20
		st.parallel = st.parallelKnown && n > 1
	}
	if v, ok := user["output-order"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		st.csnKnown = err == nil && (n == 0 || n == 1)
		st.csn = st.csnKnown && n == 1
	}
	return st
}

// accept checks one value and returns the form sent to the server.
func (opt *optSpec) accept(v string, st optStream) (string, error) {
	switch opt.policy {
	case policyGUC:
		return "", fmt.Errorf("decoding option %s: set only by the server GUC logical_decode_options_default, not per stream", opt.name)
	case policyNotStream:
		return "", optionError(opt.name, v, opt.refusal)
	case policySerial:
		if st.parallelKnown && st.parallel {
			return "", optionError(opt.name, v, "only for serial decoding (parallel-decode-num 1); openGauss's parallel decoding refuses it")
		}
	case policyParallel:
		if st.parallelKnown && !st.parallel {
			return "", optionError(opt.name, v, "only for parallel decoding (set parallel-decode-num above 1)")
		}
	case policyCSN:
		if st.csnKnown && !st.csn {
			return "", optionError(opt.name, v, "only for CSN-ordered decoding (set output-order to 1)")
		}
	}
	if strings.IndexByte(v, 0) >= 0 {
		return "", optionError(opt.name, v, "must not contain a NUL byte")
	}
	norm, ok := v, false
	switch opt.kind {
	case optBool:
		var b bool
		if b, ok = parseOptBool(v); ok {
			norm = strconv.FormatBool(b)
		}
	case optInt:
		n, err := strconv.ParseInt(v, 10, 64)
		ok = err == nil && n >= opt.min && n <= opt.upper(st)
		norm = strconv.FormatInt(n, 10)
	case optChar:
		ok = len(v) == 1 && strings.Contains(opt.chars, v)
	case optString:
		ok = true
	}
	if ok && opt.check != nil {
		ok = opt.check(norm)
	}
	if !ok {
		return "", optionError(opt.name, v, opt.ruleText(st))
	}
	return norm, nil
}

func (opt *optSpec) upper(st optStream) int64 {
	if st.parallel && opt.parMax != 0 {
		return opt.parMax
	}
	return opt.max
}

func (opt *optSpec) ruleText(st optStream) string {
	switch {
	case opt.rule != "":
		return opt.rule
	case opt.kind == optBool:
		return "must be a boolean: true, false, on, off, 1, 0, yes or no"
	case opt.kind == optInt && opt.parMax != 0 && st.parallel:
		return fmt.Sprintf("must be an integer from %d to %d (in parallel decoding GaussDB's bound is a share of max_process_memory; openGauss's is %d)", opt.min, opt.parMax, opt.max)
	case opt.kind == optInt && opt.parMax != 0:
		return fmt.Sprintf("must be an integer from %d to %d in serial decoding", opt.min, opt.max)
	case opt.kind == optInt:
		return fmt.Sprintf("must be an integer from %d to %d", opt.min, opt.max)
	}
	return "invalid value"
}

func optionError(name, value, rule string) error {
	return fmt.Errorf("decoding option %s = %q: %s", name, value, rule)
}

// fillDefaults adds decant's own settings where the user set nothing.
func (o *Options) fillDefaults(tables string) error {
	set := func(name, value string) {
		if _, ok := o.values[name]; !ok {
			o.values[name] = value
		}
	}
	set("include-xids", "true")
	set("include-timestamp", "true")
	set("skip-empty-xacts", "true")
	set("parallel-decode-num", "1")
	if o.Parallel() {
		set("decode-style", "b")
		set("sending-batch", "0")
	}
	for name := range o.values {
		if strings.HasPrefix(name, "white-table-list") {
			return nil // the user owns the server-side filter
		}
	}
	list, err := whiteTableList(tables)
	if err != nil {
		return fmt.Errorf("white-table-list from --tables: %w", err)
	}
	if list != "" {
		o.values["white-table-list"] = list
	}
	return nil
}

// whiteTableList turns decant's table patterns into a white-table-list, the
// only table filter a GaussDB stream has (there are no publications). The
// server compares each side of schema.table exactly, '*' alone meaning any
// name (openGauss CheckWhiteList), while decant's '*' matches any run of
// characters; a pattern the server cannot express (sales_*.orders, or a
// name with whitespace, which the list syntax forbids) is refused rather
// than widened, since nothing downstream would drop the extra tables.
// "" when every table is wanted.
func whiteTableList(tables string) (string, error) {
	f, err := source.ParseTableFilter(tables)
	if err != nil {
		return "", err
	}
	if f.String() == "" {
		return "", nil
	}
	var out []string
	for _, item := range strings.Split(f.String(), ",") {
		schema, name, _ := strings.Cut(item, ".")
		if !wholeName(schema) || !wholeName(name) {
			return "", fmt.Errorf("table pattern %q: a GaussDB or openGauss source filters tables with white-table-list, "+
				"where '*' can only stand for a whole schema or table name (public.*, *.orders) and names cannot contain whitespace; list the tables instead", item)
		}
		if item == "*.*" {
			return "", nil
		}
		if !slices.Contains(out, item) {
			out = append(out, item)
		}
	}
	return strings.Join(out, ","), nil
}

// wholeName reports whether one side of a pattern means the same to the
// server as to decant: '*' alone, or a name without '*' or whitespace.
func wholeName(s string) bool {
	return s == "*" || !strings.Contains(s, "*") && strings.IndexFunc(s, unicode.IsSpace) < 0
}

func (o Options) findWarnings() []string {
	var w []string
	if o.bool("enable-ddl-json-format", false) && !o.DDL() {
		w = append(w, "decoding option enable-ddl-json-format has no effect without enable-ddl-decoding = true")
	}
	if !o.Parallel() {
		for _, name := range []string{"change-log-max-len", "max-decode-to-sender-cache-num"} {
			if _, ok := o.values[name]; ok {
				w = append(w, fmt.Sprintf("decoding option %s has no effect in serial decoding (parallel-decode-num = 1)", name))
			}
		}
	}
	if _, ok := o.values["max-reorderbuffer-in-memory"]; ok && o.Parallel() {
		w = append(w, "decoding option max-reorderbuffer-in-memory has no effect in GaussDB's parallel decoding, where it is deprecated (openGauss honours it)")
	}
	if o.bool("force-binary", false) {
		w = append(w, "decoding option force-binary has no effect on a stream: mppdb_decoding's serial output is text either way")
	}
	if v, ok := o.values["max-decode-to-sender-cache-num"]; ok && o.Parallel() {
		if n, _ := strconv.Atoi(v); n < 8192 {
			w = append(w, fmt.Sprintf("decoding option max-decode-to-sender-cache-num = %q: the server raises values below 8192 when decoding starts", v))
		}
	}
	return w
}

// Warnings are settings that are valid but will not do what they say.
func (o Options) Warnings() []string { return slices.Clone(o.warnings) }

// Get returns the value START_REPLICATION sends for name (normalised:
// true/false, canonical integers), whether the user or decant set it.
func (o Options) Get(name string) (string, bool) {
	v, ok := o.values[name]
	return v, ok
}

// Parallel reports parallel decoding: parallel-decode-num > 1.
func (o Options) Parallel() bool { return o.int("parallel-decode-num", 1) > 1 }

// Style is the output format: 'b', 'j' or 't' (decode-style) in parallel
// decoding, 'm' (mppdb_decoding's serial text) otherwise.
func (o Options) Style() byte {
	if !o.Parallel() {
		return 'm'
	}
	if v := o.values["decode-style"]; v != "" {
		return v[0]
	}
	return 'b'
}

// Batch reports batched sending (sending-batch = 1; parallel only).
func (o Options) Batch() bool { return o.Parallel() && o.int("sending-batch", 0) == 1 }

// CSNOrder reports CSN-ordered output (output-order = 1): the slot must be
// CSN-ordered and positions are CSNs.
func (o Options) CSNOrder() bool { return o.int("output-order", 0) == 1 }

// Heartbeat reports enable-heartbeat: 'h' messages for lag and liveness.
func (o Options) Heartbeat() bool { return o.bool("enable-heartbeat", false) }

// DecodePosition reports enable-decode-position: 'L' messages.
func (o Options) DecodePosition() bool { return o.bool("enable-decode-position", false) }

// AutoAdvance reports auto-advance: the server advances an idle slot.
func (o Options) AutoAdvance() bool { return o.bool("auto-advance", false) }

// IncludeXids reports include-xids (GaussDB's default: true).
func (o Options) IncludeXids() bool { return o.bool("include-xids", true) }

// Rowno reports enable-rowno: rowno system columns in tuples.
func (o Options) Rowno() bool { return o.bool("enable-rowno", false) }

// DDL reports enable-ddl-decoding.
func (o Options) DDL() bool { return o.bool("enable-ddl-decoding", false) }

// SkipGenerated reports skip-generated-columns: new tuples leave stored
// generated columns out (old tuples never do).
func (o Options) SkipGenerated() bool { return o.bool("skip-generated-columns", false) }

func (o Options) bool(name string, def bool) bool {
	v, ok := o.values[name]
	if !ok {
		return def
	}
	return v == "true"
}

func (o Options) int(name string, def int64) int64 {
	v, ok := o.values[name]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return def
	}
	return n
}

// CheckSlot applies §4 rule 7 once the reader knows the slot's order from
// pg_replication_slots.confirmed_csn (non-zero = CSN-ordered): output-order
// 1 needs a CSN-ordered slot and 0 an LSN-ordered one, or the server fails
// the start.
func (o Options) CheckSlot(csnOrdered bool) error {
	switch {
	case o.CSNOrder() && !csnOrdered:
		return optionError("output-order", "1", "the slot is LSN-ordered (confirmed_csn = 0); leave output-order at 0 or use a CSN-ordered slot")
	case !o.CSNOrder() && csnOrdered:
		return optionError("output-order", "0", "the slot is CSN-ordered (confirmed_csn <> 0); set output-order to 1")
	}
	return nil
}

// CheckCN applies §4 rule 11 once the reader knows it is connected to a
// GaussDB CN (distributed decoding): options that only a DN understands are
// refused.
func (o Options) CheckCN() error {
	var errs []error
	for _, name := range o.names() {
		if opt, ok := lookupOption(name); ok && opt.modes&inCN == 0 {
			errs = append(errs, optionError(name, o.values[name], "not supported when decoding through a CN; connect to a DN"))
		}
	}
	return errors.Join(errs...)
}

func (o Options) names() []string {
	names := make([]string, 0, len(o.values))
	for name := range o.values {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// StartReplicationArgs renders the options for START_REPLICATION as
// ("name" 'value', ...) sorted by name: names double-quoted (they contain
// '-'), values single-quoted with ' doubled, the only escape the
// replication grammar has. "" when there are none.
func (o Options) StartReplicationArgs() string {
	if len(o.values) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('(')
	for i, name := range o.names() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`"` + strings.ReplaceAll(name, `"`, `""`) + `" `)
		b.WriteString(`'` + strings.ReplaceAll(o.values[name], `'`, `''`) + `'`)
	}
	b.WriteByte(')')
	return b.String()
}

// parseOptBool accepts what decant documents; the server's parse_bool also
// takes prefixes such as "t", which decant does not pass on.
func parseOptBool(v string) (value, ok bool) {
	switch strings.ToLower(v) {
	case "true", "on", "1", "yes":
		return true, true
	case "false", "off", "0", "no":
		return false, true
	}
	return false, false
}

func isPowerOfTwo(v string) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && n > 0 && n&(n-1) == 0
}

const tableListRule = "must be schema.table[,schema.table...] where '*' stands for any schema or any table, without whitespace"

var tableListRE = regexp.MustCompile(`^(\*|[^.,\s]+)\.(\*|[^,\s]+)(,(\*|[^.,\s]+)\.(\*|[^,\s]+))*$`)

// validTableList is the seed's white-table-list syntax; "no whitespace"
// covers Unicode spaces too, which \s does not.
func validTableList(v string) bool {
	return tableListRE.MatchString(v) && strings.IndexFunc(v, unicode.IsSpace) < 0
}

func validOIDList(v string) bool {
	for _, item := range strings.Split(v, ",") {
		n, err := strconv.ParseUint(item, 10, 32)
		if err != nil || n == 0 || item[0] == '+' {
			return false
		}
	}
	return true
}

func validNameList(v string) bool {
	return !slices.Contains(strings.Split(v, ","), "")
}

func validStartPosition(v string) bool {
	csn, lsn, ok := strings.Cut(v, "/")
	return ok && unsignedDecimal(csn) && unsignedDecimal(lsn)
}

func unsignedDecimal(s string) bool {
	if s == "" || s[0] == '+' {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// unknownOptionError refuses a name neither product documents, suggesting
// known names that differ by a typo, by '_' for '-', or by a missing prefix.
func unknownOptionError(name, value string) error {
	if s := suggestOptions(name); len(s) > 0 {
		return optionError(name, value, "unknown option (did you mean "+orList(s)+"?)")
	}
	return optionError(name, value, "unknown option (docs/gaussdb.md lists the known ones)")
}

func suggestOptions(name string) []string {
	folded := strings.ReplaceAll(strings.ToLower(name), "_", "-")
	type near struct {
		name string
		d    int
	}
	var found []near
	for _, opt := range optSpecs {
		d := editDistance(folded, opt.name)
		switch {
		case folded == opt.name:
			return []string{opt.name}
		case d <= 2:
		case len(folded) >= 5 && (strings.Contains(opt.name, folded) || strings.Contains(folded, opt.name)):
			d = 3
		default:
			continue
		}
		found = append(found, near{opt.name, d})
	}
	slices.SortStableFunc(found, func(a, b near) int { return a.d - b.d })
	var out []string
	for i := 0; i < len(found) && i < 3; i++ {
		out = append(out, found[i].name)
	}
	return out
}

func orList(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// editDistance is the Levenshtein distance between two byte strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
