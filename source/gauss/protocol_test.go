package gauss

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

// unhex reads a hexdump in the spec's layout ("0000  6b 68 ...  |ascii|").
func unhex(t *testing.T, dump string) []byte {
	t.Helper()
	var out []byte
	for _, line := range strings.Split(strings.TrimSpace(dump), "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "|"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		b, err := hex.DecodeString(strings.Join(fields[1:], ""))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// The spec's keepalive fixture: walEnd 0/CFE5E68, PRIMARY, NORMAL, sendTime
// 2025-11-22 08:09:34.6 UTC, replyRequested=1.
func TestParseKeepalive(t *testing.T) {
	b := unhex(t, `
0000  6b 68 5e fe 0c 00 00 00 00 02 00 00 00 01 00 00  |kh^.............|
0010  00 40 33 1e 38 29 e7 02 00 01 00 00 00 00 00 00  |.@3.8)..........|
0020  00                                               |.|`)
	k, err := parseKeepalive(b)
	if err != nil {
		t.Fatal(err)
	}
	if k.WALEnd.String() != "0/CFE5E68" || !k.ReplyRequested || !k.SendTime.Equal(time.Date(2025, 11, 22, 8, 9, 34, 600000000, time.UTC)) {
		t.Errorf("%+v", k)
	}
	if _, err := parseKeepalive(b[:25]); err == nil {
		t.Error("a 25-byte keepalive was accepted")
	}
}

// The spec's recommended 'r' encoding for flushed = 0/CFE5E68 at the same
// send time.
func TestStatusUpdate(t *testing.T) {
	want := unhex(t, `
0000  72 68 5e fe 0c 00 00 00 00 68 5e fe 0c 00 00 00  |rh^......h^.....|
0010  00 68 5e fe 0c 00 00 00 00 68 5e fe 0c 00 00 00  |.h^......h^.....|
0020  00 68 5e fe 0c 00 00 00 00 00 00 00 00 00 00 00  |.h^.............|
0030  00 40 33 1e 38 29 e7 02 00 00 00 00 00 00 00 00  |.@3.8)..........|
0040  00                                               |.|`)
	got := statusUpdate(0xCFE5E68, time.Date(2025, 11, 22, 8, 9, 34, 600000000, time.UTC), false)
	if !bytes.Equal(got, want) {
		t.Errorf("status update:\n got %x\nwant %x", got, want)
	}
	// Asking for a keepalive sets replyRequested (offset 57) and nothing else.
	want[57] = 1
	got = statusUpdate(0xCFE5E68, time.Date(2025, 11, 22, 8, 9, 34, 600000000, time.UTC), true)
	if !bytes.Equal(got, want) {
		t.Errorf("status update asking for a reply:\n got %x\nwant %x", got, want)
	}
}

func TestParseXLogData(t *testing.T) {
	b := unhex(t, `
0000  77 00 00 00 00 0c fe 5d 40 00 00 00 00 0c fe 5d  |w......]@......]|
0010  40 00 02 e7 29 38 1e 33 40                       |@...)8.3@|`)
	start, payload, err := parseXLogData(append(b, 'x'))
	if err != nil || start.String() != "0/CFE5D40" || string(payload) != "x" {
		t.Errorf("%s %q %v", start, payload, err)
	}
}
