package gauss

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func mustParseOptions(t *testing.T, user map[string]string, tables string) Options {
	t.Helper()
	o, err := ParseOptions(user, tables)
	if err != nil {
		t.Fatalf("ParseOptions(%v, %q): %v", user, tables, err)
	}
	return o
}

func TestOptionDefaults(t *testing.T) {
	o := mustParseOptions(t, nil, "")
	want := `("include-timestamp" 'true', "include-xids" 'true', "parallel-decode-num" '1', "skip-empty-xacts" 'true')`
	if got := o.StartReplicationArgs(); got != want {
		t.Errorf("args:\n got %s\nwant %s", got, want)
	}
	if o.Parallel() || o.Style() != 'm' || o.Batch() || o.CSNOrder() || o.Heartbeat() || o.DecodePosition() ||
		o.AutoAdvance() || !o.IncludeXids() || o.Rowno() || o.DDL() {
		t.Errorf("accessors of the defaults: parallel %v style %c batch %v csn %v heartbeat %v position %v auto %v xids %v rowno %v ddl %v",
			o.Parallel(), o.Style(), o.Batch(), o.CSNOrder(), o.Heartbeat(), o.DecodePosition(), o.AutoAdvance(), o.IncludeXids(), o.Rowno(), o.DDL())
	}
	if w := o.Warnings(); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
	if _, ok := o.Get("decode-style"); ok {
		t.Error("decode-style set in serial decoding")
	}
}

func TestOptionDefaultsParallel(t *testing.T) {
	o := mustParseOptions(t, map[string]string{"parallel-decode-num": "4"}, "")
	want := `("decode-style" 'b', "include-timestamp" 'true', "include-xids" 'true', "parallel-decode-num" '4', "sending-batch" '0', "skip-empty-xacts" 'true')`
	if got := o.StartReplicationArgs(); got != want {
		t.Errorf("args:\n got %s\nwant %s", got, want)
	}
	if !o.Parallel() || o.Style() != 'b' || o.Batch() {
		t.Errorf("parallel %v style %c batch %v", o.Parallel(), o.Style(), o.Batch())
	}
}

func TestOptionUserBeatsDefaults(t *testing.T) {
	o := mustParseOptions(t, map[string]string{
		"include-xids": "off", "include-timestamp": "NO", "skip-empty-xacts": "0",
		"parallel-decode-num": "2", "decode-style": "t", "sending-batch": "1",
	}, "")
	for name, want := range map[string]string{
		"include-xids": "false", "include-timestamp": "false", "skip-empty-xacts": "false", "decode-style": "t", "sending-batch": "1",
	} {
		if got, _ := o.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if o.IncludeXids() || o.Style() != 't' || !o.Batch() {
		t.Errorf("xids %v style %c batch %v", o.IncludeXids(), o.Style(), o.Batch())
	}
}

func TestOptionAccessors(t *testing.T) {
	o := mustParseOptions(t, map[string]string{
		"parallel-decode-num": "20", "decode-style": "j", "output-order": "1",
		"enable-heartbeat": "yes", "enable-decode-position": "ON", "auto-advance": "true",
		"enable-rowno": "1", "enable-ddl-decoding": "True",
	}, "")
	if !o.Parallel() || o.Style() != 'j' || o.Batch() || !o.CSNOrder() || !o.Heartbeat() || !o.DecodePosition() ||
		!o.AutoAdvance() || !o.IncludeXids() || !o.Rowno() || !o.DDL() {
		t.Errorf("parallel %v style %c batch %v csn %v heartbeat %v position %v auto %v xids %v rowno %v ddl %v",
			o.Parallel(), o.Style(), o.Batch(), o.CSNOrder(), o.Heartbeat(), o.DecodePosition(), o.AutoAdvance(), o.IncludeXids(), o.Rowno(), o.DDL())
	}
	var zero Options
	if zero.StartReplicationArgs() != "" || zero.Style() != 'm' || !zero.IncludeXids() || zero.Parallel() {
		t.Error("zero Options")
	}
}

// TestOptionAccepted covers the edges of every range and the accepted
// spellings; want is what START_REPLICATION sends.
func TestOptionAccepted(t *testing.T) {
	par := func(m map[string]string) map[string]string { m["parallel-decode-num"] = "2"; return m }
	csn := func(m map[string]string) map[string]string { m["output-order"] = "1"; return m }
	tests := []struct {
		user  map[string]string
		name  string
		want  string
		style byte
	}{
		{map[string]string{"include-xids": "TRUE"}, "include-xids", "true", 0},
		{map[string]string{"include-xids": "Yes"}, "include-xids", "true", 0},
		{map[string]string{"include-xids": "on"}, "include-xids", "true", 0},
		{map[string]string{"include-xids": "1"}, "include-xids", "true", 0},
		{map[string]string{"include-xids": "False"}, "include-xids", "false", 0},
		{map[string]string{"include-xids": "no"}, "include-xids", "false", 0},
		{map[string]string{"include-xids": "OFF"}, "include-xids", "false", 0},
		{map[string]string{"include-xids": "0"}, "include-xids", "false", 0},
		{map[string]string{"parallel-decode-num": "1"}, "parallel-decode-num", "1", 'm'},
		{map[string]string{"parallel-decode-num": "20"}, "parallel-decode-num", "20", 'b'},
		{map[string]string{"parallel-decode-num": "010"}, "parallel-decode-num", "10", 'b'},
		{map[string]string{"parallel-decode-num": "+3"}, "parallel-decode-num", "3", 'b'},
		{map[string]string{"output-order": "0"}, "output-order", "0", 0},
		{map[string]string{"output-order": "1"}, "output-order", "1", 0},
		{par(map[string]string{"decode-style": "b"}), "decode-style", "b", 'b'},
		{par(map[string]string{"decode-style": "j"}), "decode-style", "j", 'j'},
		{par(map[string]string{"decode-style": "t"}), "decode-style", "t", 't'},
		{par(map[string]string{"sending-batch": "0"}), "sending-batch", "0", 'b'},
		{par(map[string]string{"sending-batch": "1"}), "sending-batch", "1", 'b'},
		{par(map[string]string{"parallel-queue-size": "2"}), "parallel-queue-size", "2", 0},
		{par(map[string]string{"parallel-queue-size": "128"}), "parallel-queue-size", "128", 0},
		{par(map[string]string{"parallel-queue-size": "1024"}), "parallel-queue-size", "1024", 0},
		{par(map[string]string{"max-logical-decode-memory": "6"}), "max-logical-decode-memory", "6", 0},
		{par(map[string]string{"max-logical-decode-memory": "1024"}), "max-logical-decode-memory", "1024", 0},
		{map[string]string{"max-txn-in-memory": "0"}, "max-txn-in-memory", "0", 0},
		{map[string]string{"max-txn-in-memory": "100"}, "max-txn-in-memory", "100", 0},
		{par(map[string]string{"max-txn-in-memory": "2147483647"}), "max-txn-in-memory", "2147483647", 0},
		{map[string]string{"max-reorderbuffer-in-memory": "100"}, "max-reorderbuffer-in-memory", "100", 0},
		{par(map[string]string{"max-reorderbuffer-in-memory": "500"}), "max-reorderbuffer-in-memory", "500", 0},
		{map[string]string{"desc-memory-limit": "10"}, "desc-memory-limit", "10", 0},
		{map[string]string{"desc-memory-limit": "1048576"}, "desc-memory-limit", "1048576", 0},
		{map[string]string{"sender-timeout": "0"}, "sender-timeout", "0", 0},
		{map[string]string{"sender-timeout": "2147483647"}, "sender-timeout", "2147483647", 0},
		{map[string]string{"change-log-max-len": "1"}, "change-log-max-len", "1", 0},
		{par(map[string]string{"change-log-max-len": "65535"}), "change-log-max-len", "65535", 0},
		{par(map[string]string{"max-decode-to-sender-cache-num": "65535"}), "max-decode-to-sender-cache-num", "65535", 0},
		{csn(map[string]string{"slice-id": "0"}), "slice-id", "0", 0},
		{csn(map[string]string{"slice-id": "8192"}), "slice-id", "8192", 0},
		{csn(map[string]string{"logical-receiver-num": "1"}), "logical-receiver-num", "1", 0},
		{csn(map[string]string{"logical-receiver-num": "20"}), "logical-receiver-num", "20", 0},
		{csn(map[string]string{"start-position": "2357/217996416"}), "start-position", "2357/217996416", 0},
		{csn(map[string]string{"start-position": "0/18446744073709551615"}), "start-position", "0/18446744073709551615", 0},
		{map[string]string{"decode-sequence": "off"}, "decode-sequence", "false", 0},
		{map[string]string{"white-table-list": "public.t1,public.t2,*.t3,my_schema.*"}, "white-table-list", "public.t1,public.t2,*.t3,my_schema.*", 0},
		{map[string]string{"white-table-list": "*.*"}, "white-table-list", "*.*", 0},
		{map[string]string{"white-table-list9": "s.t"}, "white-table-list9", "s.t", 0},
		{map[string]string{"exclude-userids": "10,16384"}, "exclude-userids", "10,16384", 0},
		{map[string]string{"exclude-userids": "4294967295"}, "exclude-userids", "4294967295", 0},
		{map[string]string{"exclude-users": "repl,o'brien"}, "exclude-users", "repl,o'brien", 0},
		{map[string]string{"dynamic-resolution": "false"}, "dynamic-resolution", "false", 0},
		{map[string]string{"standby-connection": "true"}, "standby-connection", "true", 0},
		{map[string]string{"skip-generated-columns": "on"}, "skip-generated-columns", "true", 0},
		{map[string]string{"timezone-is-utc": "1"}, "timezone-is-utc", "true", 0},
		{map[string]string{"include-user": "yes"}, "include-user", "true", 0},
		{map[string]string{"include-originid": "true"}, "include-originid", "true", 0},
		{map[string]string{"only-local": "false"}, "only-local", "false", 0},
		{map[string]string{"enable-ddl-json-format": "true", "enable-ddl-decoding": "true"}, "enable-ddl-json-format", "true", 0},
	}
	for _, tt := range tests {
		o, err := ParseOptions(tt.user, "")
		if err != nil {
			t.Errorf("%v: %v", tt.user, err)
			continue
		}
		if got, ok := o.Get(tt.name); !ok || got != tt.want {
			t.Errorf("%v: %s = %q (%v), want %q", tt.user, tt.name, got, ok, tt.want)
		}
		if tt.style != 0 && o.Style() != tt.style {
			t.Errorf("%v: style %c, want %c", tt.user, o.Style(), tt.style)
		}
	}
}

func TestOptionRejected(t *testing.T) {
	tests := []struct {
		user map[string]string
		want string
	}{
		// rule 1
		{map[string]string{"sending-bacth": "1"}, `decoding option sending-bacth = "1": unknown option (did you mean sending-batch?)`},
		{map[string]string{"include_xids": "true"}, `decoding option include_xids = "true": unknown option (did you mean include-xids?)`},
		{map[string]string{"Include-Xids": "true"}, `decoding option Include-Xids = "true": unknown option (did you mean include-xids?)`},
		{map[string]string{"heartbeat": "true"}, `decoding option heartbeat = "true": unknown option (did you mean enable-heartbeat?)`},
		{map[string]string{"proto_version": "1"}, `decoding option proto_version = "1": unknown option (docs/gaussdb.md lists the known ones)`},
		// rule 2
		{map[string]string{"parallel-decode-num": "25"}, `decoding option parallel-decode-num = "25": must be an integer from 1 to 20`},
		{map[string]string{"parallel-decode-num": "0"}, `decoding option parallel-decode-num = "0": must be an integer from 1 to 20`},
		{map[string]string{"parallel-decode-num": "0x4"}, `decoding option parallel-decode-num = "0x4": must be an integer from 1 to 20`},
		{map[string]string{"parallel-decode-num": " 4"}, `decoding option parallel-decode-num = " 4": must be an integer from 1 to 20`},
		// rule 3
		{map[string]string{"decode-style": "b"}, `decoding option decode-style = "b": only for parallel decoding (set parallel-decode-num above 1)`},
		{map[string]string{"parallel-decode-num": "1", "sending-batch": "1"}, `decoding option sending-batch = "1": only for parallel decoding (set parallel-decode-num above 1)`},
		{map[string]string{"parallel-queue-size": "64"}, `decoding option parallel-queue-size = "64": only for parallel decoding (set parallel-decode-num above 1)`},
		{map[string]string{"max-logical-decode-memory": "8"}, `decoding option max-logical-decode-memory = "8": only for parallel decoding (set parallel-decode-num above 1)`},
		// rule 4
		{map[string]string{"max-queue-cache-num": "16384"}, `decoding option max-queue-cache-num: set only by the server GUC logical_decode_options_default, not per stream`},
		{map[string]string{"max-control-memory-size": "10"}, `decoding option max-control-memory-size: set only by the server GUC logical_decode_options_default, not per stream`},
		{map[string]string{"max-toast-memory-size": "100"}, `decoding option max-toast-memory-size: set only by the server GUC logical_decode_options_default, not per stream`},
		{map[string]string{"enable-cn-decode": "true"}, `decoding option enable-cn-decode: set only by the server GUC logical_decode_options_default, not per stream`},
		// rule 5
		{map[string]string{"decode-sequence": "true"}, `decoding option decode-sequence = "true": must be false: the server refuses true (sequence changes cannot be decoded)`},
		// rule 6
		{map[string]string{"parallel-decode-num": "4", "parallel-queue-size": "100"}, `decoding option parallel-queue-size = "100": must be a power of two from 2 to 1024`},
		{map[string]string{"parallel-decode-num": "4", "parallel-queue-size": "1"}, `decoding option parallel-queue-size = "1": must be a power of two from 2 to 1024`},
		{map[string]string{"parallel-decode-num": "4", "parallel-queue-size": "2048"}, `decoding option parallel-queue-size = "2048": must be a power of two from 2 to 1024`},
		{map[string]string{"parallel-decode-num": "4", "sending-batch": "2"}, `decoding option sending-batch = "2": must be 0 or 1`},
		{map[string]string{"parallel-decode-num": "4", "decode-style": "B"}, `decoding option decode-style = "B": must be one of b, j, t`},
		{map[string]string{"parallel-decode-num": "4", "decode-style": "bj"}, `decoding option decode-style = "bj": must be one of b, j, t`},
		{map[string]string{"parallel-decode-num": "4", "decode-style": ""}, `decoding option decode-style = "": must be one of b, j, t`},
		{map[string]string{"include-xids": "t"}, `decoding option include-xids = "t": must be a boolean: true, false, on, off, 1, 0, yes or no`},
		{map[string]string{"include-xids": ""}, `decoding option include-xids = "": must be a boolean: true, false, on, off, 1, 0, yes or no`},
		{map[string]string{"max-txn-in-memory": "101"}, `decoding option max-txn-in-memory = "101": must be an integer from 0 to 100 in serial decoding`},
		{map[string]string{"parallel-decode-num": "2", "max-txn-in-memory": "-1"}, `decoding option max-txn-in-memory = "-1": must be an integer from 0 to 2147483647 (in parallel decoding GaussDB's bound is a share of max_process_memory; openGauss's is 100)`},
		{map[string]string{"desc-memory-limit": "9"}, `decoding option desc-memory-limit = "9": must be an integer from 10 to 1048576`},
		{map[string]string{"sender-timeout": "2147483648"}, `decoding option sender-timeout = "2147483648": must be an integer from 0 to 2147483647`},
		{map[string]string{"sender-timeout": "10s"}, `decoding option sender-timeout = "10s": must be an integer from 0 to 2147483647`},
		{map[string]string{"change-log-max-len": "0"}, `decoding option change-log-max-len = "0": must be an integer from 1 to 65535`},
		{map[string]string{"exclude-userids": "10,,11"}, `decoding option exclude-userids = "10,,11": must be a comma-separated list of user OIDs (decimal numbers from 1 to 4294967295)`},
		{map[string]string{"exclude-userids": "alice"}, `decoding option exclude-userids = "alice": must be a comma-separated list of user OIDs (decimal numbers from 1 to 4294967295)`},
		{map[string]string{"exclude-users": "a,"}, `decoding option exclude-users = "a,": must be a comma-separated list of user names without empty entries`},
		{map[string]string{"exclude-users": "a\x00b"}, `decoding option exclude-users = "a\x00b": must not contain a NUL byte`},
		// rule 7: output-order's own range
		{map[string]string{"output-order": "2"}, `decoding option output-order = "2": must be 0 or 1`},
		// rule 8
		{map[string]string{"slice-id": "3"}, `decoding option slice-id = "3": only for CSN-ordered decoding (set output-order to 1)`},
		{map[string]string{"output-order": "0", "logical-receiver-num": "2"}, `decoding option logical-receiver-num = "2": only for CSN-ordered decoding (set output-order to 1)`},
		{map[string]string{"start-position": "1/2"}, `decoding option start-position = "1/2": only for CSN-ordered decoding (set output-order to 1)`},
		{map[string]string{"output-order": "1", "slice-id": "-1"}, `decoding option slice-id = "-1": must be an integer from 0 to 8192`},
		{map[string]string{"output-order": "1", "logical-receiver-num": "21"}, `decoding option logical-receiver-num = "21": must be an integer from 1 to 20`},
		{map[string]string{"output-order": "1", "start-position": "0/CFE5C80"}, `decoding option start-position = "0/CFE5C80": must be CSN/LSN: two unsigned decimal integers separated by '/' (e.g. 2357/217996416)`},
		{map[string]string{"output-order": "1", "start-position": "12"}, `decoding option start-position = "12": must be CSN/LSN: two unsigned decimal integers separated by '/' (e.g. 2357/217996416)`},
		{map[string]string{"output-order": "1", "start-position": "-1/2"}, `decoding option start-position = "-1/2": must be CSN/LSN: two unsigned decimal integers separated by '/' (e.g. 2357/217996416)`},
		// rule 9
		{map[string]string{"parallel-decode-num": "2", "force-binary": "true"}, `decoding option force-binary = "true": only for serial decoding (parallel-decode-num 1); openGauss's parallel decoding refuses it`},
		{map[string]string{"data-limit": "10"}, `decoding option data-limit = "10": only for pg_logical_get_area_changes (SQL-function decoding, with the GUC logical_decode_options_default), not for streaming`},
		// rule 12
		{map[string]string{"white-table-list": "public.t1, public.t2"}, `decoding option white-table-list = "public.t1, public.t2": ` + tableListRule},
		{map[string]string{"white-table-list": "public"}, `decoding option white-table-list = "public": ` + tableListRule},
		{map[string]string{"white-table-list": "public.t1,"}, `decoding option white-table-list = "public.t1,": ` + tableListRule},
		{map[string]string{"white-table-list": ".t1"}, `decoding option white-table-list = ".t1": ` + tableListRule},
		{map[string]string{"white-table-list": ""}, `decoding option white-table-list = "": ` + tableListRule},
		{map[string]string{"white-table-list3": "public.t\u00a0x"}, `decoding option white-table-list3 = "public.t\u00a0x": ` + tableListRule},
	}
	for _, tt := range tests {
		_, err := ParseOptions(tt.user, "")
		if err == nil {
			t.Errorf("%q: accepted, want %s", tt.user, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.user, err, tt.want)
		}
	}
}

// TestOptionRanges checks both edges of every integer option, in the mode
// that lets it through.
func TestOptionRanges(t *testing.T) {
	for _, spec := range optSpecs {
		if spec.kind != optInt || spec.policy == policyGUC || spec.policy == policyNotStream {
			continue
		}
		for _, parallel := range []bool{false, true} {
			if spec.policy == policyParallel && !parallel {
				continue
			}
			user := func(v int64) map[string]string {
				m := map[string]string{spec.name: strconv.FormatInt(v, 10)}
				if parallel && spec.name != "parallel-decode-num" {
					m["parallel-decode-num"] = "3"
				}
				if spec.policy == policyCSN {
					m["output-order"] = "1"
				}
				return m
			}
			st := optStream{parallel: parallel}
			lo, hi := spec.min, spec.upper(st)
			if spec.name == "parallel-decode-num" {
				if parallel {
					lo = 2
				} else {
					hi = 1
				}
			}
			for _, v := range []int64{lo, hi} {
				if _, err := ParseOptions(user(v), ""); err != nil {
					t.Errorf("%s = %d (parallel %v): %v", spec.name, v, parallel, err)
				}
			}
			for _, v := range []int64{spec.min - 1, spec.upper(st) + 1} {
				if _, err := ParseOptions(user(v), ""); err == nil || !strings.Contains(err.Error(), spec.name) {
					t.Errorf("%s = %d (parallel %v): accepted or unnamed: %v", spec.name, v, parallel, err)
				}
			}
		}
	}
}

func TestOptionOnlyParallelOrCSN(t *testing.T) {
	for _, spec := range optSpecs {
		switch spec.policy {
		case policyParallel:
			for _, user := range []map[string]string{{spec.name: "x"}, {spec.name: "x", "parallel-decode-num": "1"}} {
				_, err := ParseOptions(user, "")
				if err == nil || !strings.Contains(err.Error(), "only for parallel decoding") {
					t.Errorf("%v: %v", user, err)
				}
			}
		case policyCSN:
			for _, user := range []map[string]string{{spec.name: "x"}, {spec.name: "x", "output-order": "0"}} {
				_, err := ParseOptions(user, "")
				if err == nil || !strings.Contains(err.Error(), "only for CSN-ordered decoding") {
					t.Errorf("%v: %v", user, err)
				}
			}
		}
	}
}

func TestOptionErrorsJoined(t *testing.T) {
	_, err := ParseOptions(map[string]string{"parallel-decode-num": "99", "include-xids": "maybe", "foo": "1"}, "")
	want := `decoding option foo = "1": unknown option (docs/gaussdb.md lists the known ones)
decoding option include-xids = "maybe": must be a boolean: true, false, on, off, 1, 0, yes or no
decoding option parallel-decode-num = "99": must be an integer from 1 to 20`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	// An invalid parallel-decode-num does not also refuse every parallel
	// option: the one error is enough.
	_, err = ParseOptions(map[string]string{"parallel-decode-num": "x", "decode-style": "b"}, "")
	if err == nil || err.Error() != `decoding option parallel-decode-num = "x": must be an integer from 1 to 20` {
		t.Errorf("got %v", err)
	}
}

func TestOptionWarnings(t *testing.T) {
	tests := []struct {
		user map[string]string
		want []string
	}{
		{map[string]string{"enable-ddl-json-format": "true"}, []string{"decoding option enable-ddl-json-format has no effect without enable-ddl-decoding = true"}},
		{map[string]string{"enable-ddl-json-format": "true", "enable-ddl-decoding": "true"}, nil},
		{map[string]string{"enable-ddl-json-format": "false"}, nil},
		{map[string]string{"change-log-max-len": "4096", "max-decode-to-sender-cache-num": "8192"}, []string{
			"decoding option change-log-max-len has no effect in serial decoding (parallel-decode-num = 1)",
			"decoding option max-decode-to-sender-cache-num has no effect in serial decoding (parallel-decode-num = 1)"}},
		{map[string]string{"parallel-decode-num": "4", "change-log-max-len": "4096", "max-decode-to-sender-cache-num": "8192"}, nil},
		{map[string]string{"parallel-decode-num": "4", "max-decode-to-sender-cache-num": "100"}, []string{
			`decoding option max-decode-to-sender-cache-num = "100": the server raises values below 8192 when decoding starts`}},
		{map[string]string{"parallel-decode-num": "4", "max-reorderbuffer-in-memory": "1"}, []string{
			"decoding option max-reorderbuffer-in-memory has no effect in GaussDB's parallel decoding, where it is deprecated (openGauss honours it)"}},
		{map[string]string{"force-binary": "yes"}, []string{
			"decoding option force-binary has no effect on a stream: mppdb_decoding's serial output is text either way"}},
		{map[string]string{"max-reorderbuffer-in-memory": "1"}, nil},
	}
	for _, tt := range tests {
		o := mustParseOptions(t, tt.user, "")
		if got := o.Warnings(); !slices.Equal(got, tt.want) {
			t.Errorf("%v:\n got %q\nwant %q", tt.user, got, tt.want)
		}
	}
}

func TestOptionWhiteTableListFromTables(t *testing.T) {
	tests := []struct {
		user   map[string]string
		tables string
		want   string // "" = not sent
	}{
		{nil, "", ""},
		{nil, "public.*,sales.orders,*.audit", "public.*,sales.orders,*.audit"},
		{nil, " public.t1 , public.t2,public.t1", "public.t1,public.t2"},
		{nil, "public.t1,*.*", ""},
		{map[string]string{"white-table-list": "a.b"}, "public.*", "a.b"},
		{map[string]string{"white-table-list2": "a.b"}, "public.*", ""},
	}
	for _, tt := range tests {
		o := mustParseOptions(t, tt.user, tt.tables)
		got, ok := o.Get("white-table-list")
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%v, tables %q: white-table-list = %q (%v), want %q", tt.user, tt.tables, got, ok, tt.want)
		}
		if ok && !validTableList(got) {
			t.Errorf("tables %q gave an invalid list %q", tt.tables, got)
		}
	}
	for _, tables := range []string{"sales_*.orders", "public.order*", "my schema.t", "public"} {
		_, err := ParseOptions(nil, tables)
		if err == nil || !strings.HasPrefix(err.Error(), "white-table-list from --tables: ") {
			t.Errorf("tables %q: %v", tables, err)
		}
	}
	_, err := ParseOptions(nil, "sales_*.orders")
	want := `white-table-list from --tables: table pattern "sales_*.orders": a GaussDB or openGauss source filters tables with white-table-list, ` +
		`where '*' can only stand for a whole schema or table name (public.*, *.orders) and names cannot contain whitespace; list the tables instead`
	if err == nil || err.Error() != want {
		t.Errorf("got %v", err)
	}
}

func TestOptionStartReplicationArgsQuoting(t *testing.T) {
	o := mustParseOptions(t, map[string]string{"exclude-users": "o'brien,x''y", "white-table-list": "it's.t"}, "public.*")
	want := `("exclude-users" 'o''brien,x''''y', "include-timestamp" 'true', "include-xids" 'true', "parallel-decode-num" '1', "skip-empty-xacts" 'true', "white-table-list" 'it''s.t')`
	if got := o.StartReplicationArgs(); got != want {
		t.Errorf("args:\n got %s\nwant %s", got, want)
	}
	// Every name is double-quoted and every value single-quoted, whatever
	// the option.
	re := regexp.MustCompile(`^\(("[a-z0-9-]+" '([^']|'')*')(, "[a-z0-9-]+" '([^']|'')*')*\)$`)
	if !re.MatchString(o.StartReplicationArgs()) {
		t.Errorf("args not in the quoted form: %s", o.StartReplicationArgs())
	}
}

func TestOptionCheckSlot(t *testing.T) {
	lsn := mustParseOptions(t, nil, "")
	csn := mustParseOptions(t, map[string]string{"output-order": "1"}, "")
	if lsn.CheckSlot(false) != nil || csn.CheckSlot(true) != nil {
		t.Error("matching slot refused")
	}
	if err := lsn.CheckSlot(true); err == nil || err.Error() != `decoding option output-order = "0": the slot is CSN-ordered (confirmed_csn <> 0); set output-order to 1` {
		t.Errorf("LSN options on a CSN slot: %v", err)
	}
	if err := csn.CheckSlot(false); err == nil || err.Error() != `decoding option output-order = "1": the slot is LSN-ordered (confirmed_csn = 0); leave output-order at 0 or use a CSN-ordered slot` {
		t.Errorf("CSN options on an LSN slot: %v", err)
	}
}

func TestOptionCheckCN(t *testing.T) {
	ok := mustParseOptions(t, map[string]string{"output-order": "1", "logical-receiver-num": "4", "enable-heartbeat": "true"}, "public.*")
	if err := ok.CheckCN(); err != nil {
		t.Errorf("CN options refused: %v", err)
	}
	bad := mustParseOptions(t, map[string]string{"exclude-userids": "10", "skip-generated-columns": "true"}, "")
	want := `decoding option exclude-userids = "10": not supported when decoding through a CN; connect to a DN
decoding option skip-generated-columns = "true": not supported when decoding through a CN; connect to a DN`
	if err := bad.CheckCN(); err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

// TestOptionDocTable keeps docs/gaussdb.md's option table and ParseOptions
// in step: the same names, the same types.
func TestOptionDocTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/gaussdb.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## Decoding options\n")
	if start < 0 {
		t.Fatal(`docs/gaussdb.md has no "## Decoding options" section`)
	}
	section := doc[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	rangeRow := regexp.MustCompile("^`([a-z-]+)1` … `([a-z-]+)9`$")
	single := regexp.MustCompile("^`([a-z0-9-]+)`$")
	documented := map[string]string{}
	ogDocumented := map[string]string{} // the openGauss column
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Errorf("short row: %s", line)
			continue
		}
		nameCell, typ := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])
		var names []string
		if m := rangeRow.FindStringSubmatch(nameCell); m != nil && m[1] == m[2] {
			for i := 1; i <= 9; i++ {
				names = append(names, m[1]+strconv.Itoa(i))
			}
		} else if m := single.FindStringSubmatch(nameCell); m != nil {
			names = []string{m[1]}
		} else {
			t.Errorf("cannot read the option name in: %s", line)
			continue
		}
		for _, name := range names {
			if _, dup := documented[name]; dup {
				t.Errorf("%s documented twice", name)
			}
			documented[name] = typ
			if len(cells) > 6 {
				ogDocumented[name] = strings.TrimSpace(cells[6])
			}
		}
	}
	// The openGauss column must say what CheckServer enforces.
	for name, cell := range ogDocumented {
		og := openGaussOptions[name]
		want := "—"
		switch {
		case og.serial && og.parallel:
			want = "S P"
		case og.serial:
			want = "S"
		case og.parallel:
			want = "P"
		}
		if og.max != 0 {
			want += fmt.Sprintf(" (0–%d)", og.max)
		}
		if cell != want {
			t.Errorf("docs/gaussdb.md gives %s %q in the openGauss column, CheckServer %q", name, cell, want)
		}
	}
	for name, typ := range documented {
		spec, ok := lookupOption(name)
		if !ok {
			t.Errorf("docs/gaussdb.md documents %s, which ParseOptions does not know", name)
			continue
		}
		if typ != spec.kind.String() {
			t.Errorf("docs/gaussdb.md gives %s type %q, the code %q", name, typ, spec.kind)
		}
	}
	for _, spec := range optSpecs {
		if _, ok := documented[spec.name]; !ok {
			t.Errorf("ParseOptions knows %s, which docs/gaussdb.md does not document", spec.name)
		}
	}
	if len(documented) < 40 {
		t.Errorf("only %d options read from the doc table", len(documented))
	}
}

// TestOptionEveryNameKnown makes sure no documented option is answered as
// unknown, whatever ParseOptions then says about its value.
func TestOptionEveryNameKnown(t *testing.T) {
	for _, spec := range optSpecs {
		_, err := ParseOptions(map[string]string{spec.name: "?"}, "")
		if err != nil && strings.Contains(err.Error(), "unknown option") {
			t.Errorf("%s: %v", spec.name, err)
		}
	}
}
