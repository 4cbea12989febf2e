package gauss_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/decant/decant/source/gauss"
)

func TestParseHexDump(t *testing.T) {
	cases := []struct {
		name, in string
		want     [][]byte
	}{
		{"plain lines", "# two payloads\n0a0b 0c\n\nff\n", [][]byte{{0x0a, 0x0b, 0x0c}, {0xff}}},
		{"hexdump -C", "00000000  64 00 00 00 66 77 00 00  00 00 0c fe 5d 40 00 00  |d...fw......]@..|\n" +
			"00000010  41 42                                             |AB|\n00000012\n",
			[][]byte{{0x64, 0, 0, 0, 0x66, 0x77, 0, 0, 0, 0, 0x0c, 0xfe, 0x5d, 0x40, 0, 0, 0x41, 0x42}}},
		{"hexdump -C with a repeat", "00000000  01 01 01 01 01 01 01 01  01 01 01 01 01 01 01 01  |................|\n*\n" +
			"00000030  02                                                |.|\n00000031\n",
			[][]byte{append(bytes.Repeat([]byte{1}, 48), 2)}},
		{"xxd, two payloads as offsets restart", "00000000: 6400 0000 6677  d...fw\n00000000: 4142 4320  ABC \n",
			[][]byte{{0x64, 0, 0, 0, 0x66, 0x77}, {0x41, 0x42, 0x43, 0x20}}},
		{"short offsets, ASCII with a bar and a hash", "0000  7c 23 20 30  |.# 0|\n--\n0000  00  |.|\n",
			[][]byte{{0x7c, 0x23, 0x20, 0x30}, {0}}},
	}
	for _, c := range cases {
		got, err := gauss.ParseHexDump(strings.NewReader(c.in))
		if err != nil || len(got) != len(c.want) {
			t.Errorf("%s: %d payloads (%v), want %d", c.name, len(got), err, len(c.want))
			continue
		}
		for i := range got {
			if !bytes.Equal(got[i], c.want[i]) {
				t.Errorf("%s: payload %d is %x, want %x", c.name, i, got[i], c.want[i])
			}
		}
	}
}

func TestParseHexDumpErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"0000  00 01\n0004  02\n", "line 2: offset 4, but the bytes before it end at 2"},
		{"00000000: 0001 zz  ..\n", "line 1: offset 00000000: bytes not hex"},
		{"*\n", "line 1: a \"*\" line"},
		{"0000  00 01 02 03\n*\n", "ends in a \"*\" line"},
		{"hello world\n", "line 1: not hex"},
	}
	for _, c := range cases {
		_, err := gauss.ParseHexDump(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
}

// Every hex fixture in testdata parses as the fixture tests read it.
func TestParseHexDumpFixtures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.hex"))
	if len(files) == 0 {
		t.Fatal("no hex fixtures")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := gauss.ParseHexDump(bytes.NewReader(raw))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		want := readHex(t, strings.TrimSuffix(filepath.Base(f), ".hex"))
		if len(got) != len(want) {
			t.Errorf("%s: %d payloads, the fixture reader finds %d", f, len(got), len(want))
			continue
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("%s: payload %d differs", f, i)
			}
		}
	}
}
