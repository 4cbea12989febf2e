package integration

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
	"github.com/decant/decant/source/gauss/gaussenc"
)

// example is the spec's running example: public.t1(id, name, note), two
// inserts (one with a NULL, one with an empty string), an UPDATE changing
// the key, a DELETE; xid 78108, CSN 2357.
func example() []gauss.Record {
	col := func(name string, oid uint32, v string, null bool) gauss.Column {
		c := gauss.Column{Name: name, Type: oid, Null: null}
		if !null {
			c.Value = []byte(v)
		}
		return c
	}
	row := func(id, name, note string, noteNull bool) []gauss.Column {
		return []gauss.Column{col("id", 23, id, false), col("name", 25, name, false), col("note", 1043, note, noteNull)}
	}
	return []gauss.Record{
		{Kind: gauss.KindBegin, LSN: 0xCFE5C80, FirstLSN: 0xCFE5C80, CSN: 2357},
		{Kind: gauss.KindInsert, LSN: 0xCFE5D40, Schema: "public", Table: "t1", New: row("1", "abc", "", true)},
		{Kind: gauss.KindInsert, LSN: 0xCFE5D98, Schema: "public", Table: "t1", New: row("2", "", "x", false)},
		{Kind: gauss.KindUpdate, LSN: 0xCFE5DF0, Schema: "public", Table: "t1", New: row("3", "", "x", false), Old: []gauss.Column{col("id", 23, "2", false)}},
		{Kind: gauss.KindDelete, LSN: 0xCFE5E20, Schema: "public", Table: "t1", Old: []gauss.Column{col("id", 23, "1", false)}},
		{Kind: gauss.KindCommit, LSN: 0xCFE5E68, Xid: 78108, HasXid: true},
	}
}

// TestDecodeCommand runs `decant decode` on captured payloads of every
// format, framed and as hex lines, and on malformed input.
func TestDecodeCommand(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []struct {
		name  string
		batch bool
	}{{"gauss-b", false}, {"gauss-b", true}, {"gauss-j", false}, {"gauss-j", true}, {"gauss-t", false}, {"gauss-t", true}, {"mppdb", false}} {
		format, err := gauss.ParseFormat(f.name, f.batch)
		if err != nil {
			t.Fatal(err)
		}
		payloads := gaussenc.Transaction(format, example(), source.LSN(0xCFE5E48))
		var framed bytes.Buffer
		var lines strings.Builder
		for _, p := range payloads {
			binary.Write(&framed, binary.BigEndian, uint32(len(p.Data)))
			framed.Write(p.Data)
			lines.WriteString(hex.EncodeToString(p.Data) + "\n")
		}
		framedFile := filepath.Join(dir, format.String()+".bin")
		hexFile := filepath.Join(dir, format.String()+".hex")
		os.WriteFile(framedFile, framed.Bytes(), 0o600)
		os.WriteFile(hexFile, []byte(lines.String()), 0o600)
		args := []string{"decode", "--format", f.name}
		if f.batch {
			args = append(args, "--batch")
		}
		for _, in := range [][]string{{framedFile}, {"--hex", hexFile}} {
			out, errOut, code := runDecant(t, append(args, in...)...)
			if code != 0 {
				t.Fatalf("decant %v: exit %d: %s", in, code, errOut)
			}
			kinds := decodedKinds(t, out)
			if got := strings.Join(kinds, ","); got != "begin,insert,insert,update,delete,commit" {
				t.Errorf("%s %v: records %s", format, in, got)
			}
			if !strings.Contains(out, `"schema":"public","table":"t1"`) || !strings.Contains(out, `"value":null`) || !strings.Contains(out, `"value":""`) {
				t.Errorf("%s %v: output lacks the table, the NULL or the empty string:\n%s", format, in, out)
			}
		}
	}

	// A binary record cut short: the error names the byte offset and what
	// was expected there, and exits 1.
	full := gaussenc.Transaction(gauss.Format{Style: 'b'}, example(), 0xCFE5E48)[1].Data
	var cut bytes.Buffer
	binary.Write(&cut, binary.BigEndian, uint32(30))
	cut.Write(full[:30])
	bad := filepath.Join(dir, "cut.bin")
	os.WriteFile(bad, cut.Bytes(), 0o600)
	_, errOut, code := runDecant(t, "decode", "--format", "gauss-b", bad)
	if code != 1 || !strings.Contains(errOut, "at byte") || !strings.Contains(errOut, "expected") {
		t.Errorf("malformed input: exit %d, %q", code, errOut)
	}
	if _, _, code := runDecant(t, "decode", "--format", "gauss-x", bad); code != 2 {
		t.Errorf("an unknown format: exit %d, want 2", code)
	}
}

func decodedKinds(t *testing.T, out string) []string {
	t.Helper()
	var kinds []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		kinds = append(kinds, r.Kind)
	}
	return kinds
}

// TestDecodeFixtures runs `decant decode --hex` on every payload fixture
// of source/gauss/testdata as it is, hexdump -C dumps with their ASCII
// column and comments included.
func TestDecodeFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "source", "gauss", "testdata", "*.hex"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures (%v)", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".hex")
		args := []string{"decode", "--hex"}
		switch {
		case name == "copydata_insert" || name == "xlogdata_header":
			continue // protocol frames around a payload, not payloads
		case strings.HasPrefix(name, "json"):
			args = append(args, "--format", "gauss-j")
		case strings.HasPrefix(name, "text"):
			args = append(args, "--format", "gauss-t")
		default:
			args = append(args, "--format", "gauss-b")
		}
		if strings.HasSuffix(name, "_batch") {
			args = append(args, "--batch")
		}
		out, errOut, code := runDecant(t, append(args, f)...)
		if code != 0 || len(decodedKinds(t, out)) == 0 {
			t.Errorf("decant %s: exit %d, %d records: %s", strings.Join(append(args, name), " "), code, len(decodedKinds(t, out)), errOut)
		}
	}
}
