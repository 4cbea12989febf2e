package pgsession

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

// authMsg is an AuthenticationRequest with code and payload.
func authMsg(code uint32, payload ...byte) []byte {
	b := []byte{'R', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(8+len(payload)))
	b = binary.BigEndian.AppendUint32(b, code)
	return append(b, payload...)
}

// TestCleartextGuardScan: the request for a cleartext password is found
// however the stream is cut into reads, after other requests; nothing
// after AuthenticationOk or another message is judged.
func TestCleartextGuardScan(t *testing.T) {
	negotiate := []byte{'v', 0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0}
	sasl := authMsg(10, []byte("SCRAM-SHA-256\x00\x00")...)
	for _, c := range []struct {
		name    string
		stream  []byte
		refused bool
	}{
		{"cleartext", authMsg(3), true},
		{"after negotiate", append(append([]byte{}, negotiate...), authMsg(3)...), true},
		{"md5", authMsg(5, 1, 2, 3, 4), false},
		{"sasl then ok", append(append([]byte{}, sasl...), authMsg(0)...), false},
		{"ok then a code 3 lookalike", append(authMsg(0), authMsg(3)...), false},
		{"error", append([]byte{'E', 0, 0, 0, 5, 0}, authMsg(3)...), false},
	} {
		for _, step := range []int{1, 2, 5, 9, 1000} {
			g := &cleartextGuard{addr: "db:5432"}
			var err error
			for b := c.stream; len(b) > 0 && err == nil; b = b[min(step, len(b)):] {
				err = g.scan(b[:min(step, len(b))])
			}
			var refused *source.RefusedError
			if got := errors.As(err, &refused); got != c.refused {
				t.Errorf("%s in reads of %d: refused %v, want %v (%v)", c.name, step, got, c.refused, err)
			}
			if err != nil && !strings.Contains(err.Error(), AllowCleartextParam+"=true") {
				t.Errorf("%s: %v does not name %s", c.name, err, AllowCleartextParam)
			}
		}
	}
}

// TestGuardLinkParam: allow_cleartext_password is decant's, never sent to
// the server, and must be a boolean.
func TestGuardLinkParam(t *testing.T) {
	cfg, err := ParseDSN("postgres://u@db/x?allow_cleartext_password=true")
	if err != nil {
		t.Fatal(err)
	}
	if _, sent := cfg.RuntimeParams[AllowCleartextParam]; sent || cfg.AfterNetConnect == nil {
		t.Errorf("runtime params %v, AfterNetConnect set %v", cfg.RuntimeParams, cfg.AfterNetConnect != nil)
	}
	if _, err := ParseDSN("postgres://u@db/x?allow_cleartext_password=maybe"); err == nil || !strings.Contains(err.Error(), "want true or false") {
		t.Errorf("a bad value: %v", err)
	}
}
