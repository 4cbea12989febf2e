package mysqltarget

import (
	"bytes"
	"context"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/source"
)

// TestLiteralsRoundTrip writes strings holding every character that a
// string literal escapes, and bytes of every value, through the target
// (whose batches carry their values as literals it writes itself), as
// multi-row inserts, set-based updates and single-row statements, and
// reads back exactly what was written.
func TestLiteralsRoundTrip(t *testing.T) {
	m := harness.MariaDBT(t)
	ctx := t.Context()
	const db = "literals"
	if err := m.CreateDatabase(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Exec(ctx, db, "CREATE TABLE lit (id INT PRIMARY KEY, s LONGTEXT, b LONGBLOB) DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatal(err)
	}
	s, err := mysql.Connect(ctx, m.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := checkpoint.MySQLEnsure(ctx, s.Conn, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 100, End: 100}); err != nil {
		t.Fatal(err)
	}
	target, err := mysql.New(mysql.Config{DSN: m.DSN(db), Pipeline: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close(context.Background())
	if _, err := target.Open(ctx); err != nil {
		t.Fatal(err)
	}

	rel := &source.Relation{ID: 1, Schema: "public", Name: "lit", Identity: source.IdentityDefault, Columns: []source.Column{
		{Name: "id", Type: 23, TypeMod: -1, Key: true}, {Name: "s", Type: 25, TypeMod: -1}, {Name: "b", Type: 17, TypeMod: -1},
	}}
	r := rand.New(rand.NewPCG(1, 2))
	want := map[int][2]string{}
	mk := func(op source.Op, id int) source.Change {
		str, bin := randomText(r), randomBytes(r)
		want[id] = [2]string{str, string(bin)}
		vals := []source.Value{text(strconv.Itoa(id)), text(str), text(`\x` + hex.EncodeToString(bin))}
		return source.Change{Op: op, Rel: rel, New: vals}
	}
	var inserts, updates, single []source.Change
	for id := 1; id <= 300; id++ {
		inserts = append(inserts, mk(source.OpInsert, id))
	}
	for id := 1; id <= 300; id += 2 {
		updates = append(updates, mk(source.OpUpdate, id))
	}
	single = append(single, mk(source.OpUpdate, 5), mk(source.OpInsert, 301))
	commit := source.LSN(200)
	for _, changes := range [][]source.Change{inserts, updates, single} {
		txn := &source.Txn{Xid: uint64(commit), Commit: commit}
		if err := target.Apply(ctx, txn, changes); err != nil {
			t.Fatal(err)
		}
		if err := target.Commit(ctx, checkpoint.Row{Pipeline: "p", SystemID: "1"}.After(txn, commit+1)); err != nil {
			t.Fatal(err)
		}
		commit += 10
	}

	rows, err := s.DB.QueryContext(ctx, "SELECT id, s, b FROM literals.lit")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int
		var str string
		var bin []byte
		if err := rows.Scan(&id, &str, &bin); err != nil {
			t.Fatal(err)
		}
		n++
		if w := want[id]; str != w[0] || !bytes.Equal(bin, []byte(w[1])) {
			t.Errorf("row %d: read s %q b %x, wrote s %q b %x", id, str, bin, w[0], w[1])
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Errorf("%d rows on the target, want %d", n, len(want))
	}
}

// randomText is a string of characters a literal escapes or quotes, and
// others, single- and multi-byte.
func randomText(r *rand.Rand) string {
	alphabet := []rune("\x00\n\r\x1a'\"\\`?;%_ -aZ9é€😀\t/*#")
	out := make([]rune, r.IntN(40))
	for i := range out {
		out[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(out)
}

func randomBytes(r *rand.Rand) []byte {
	out := make([]byte, r.IntN(40))
	for i := range out {
		out[i] = byte(r.IntN(256))
	}
	return out
}

func text(s string) source.Value { return source.Value{Kind: source.ValueText, Data: []byte(s)} }
