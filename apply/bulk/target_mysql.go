package bulk

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// myWriter copies into MySQL or MariaDB: the source's COPY text is
// decoded row by row, converted by the streaming writer's converters and
// fed to LOAD DATA LOCAL INFILE through a registered reader, or, where the
// server refuses local_infile, sent as multi-row INSERTs. Either way the
// rows and the task's done mark commit in one transaction.
type myWriter struct {
	cfg    Config
	log    *slog.Logger
	s      mysql.Session
	infile bool // LOAD DATA LOCAL is allowed
	plans  map[source.TableName]*myPlan
}

var _ writer = (*myWriter)(nil)

// myPlan is how one table is copied.
type myPlan struct {
	*mapping.Plan
	conv []mapping.Converter // by source column
	// hex marks, by source column, the binary and BIT target columns: LOAD
	// DATA gets their bytes in hex and stores UNHEX of them, so that no raw
	// byte meets the server's character set handling.
	hex                  []bool
	loadHead, loadTail   string // around the reader's name
	insertHead, rowMarks string
}

// Limits of one INSERT when LOAD DATA is not allowed.
const (
	insertRows  = 1000
	insertBytes = 1 << 20
	loadChunk   = 64 << 10 // LOAD DATA text prepared per Read refill
)

func newMySQLWriter(ctx context.Context, cfg Config, log *slog.Logger) (*myWriter, error) {
	s, err := mysql.Connect(ctx, cfg.Target)
	if err != nil {
		return nil, err
	}
	w := &myWriter{cfg: cfg, log: log, s: s, plans: map[source.TableName]*myPlan{}}
	var on int
	if err := s.Conn.QueryRowContext(ctx, "SELECT @@local_infile").Scan(&on); err != nil {
		s.Close()
		return nil, fmt.Errorf("read local_infile on the target: %w", mysql.Describe(err))
	}
	w.infile = on != 0
	if !w.infile {
		log.Info("local_infile is off on the target: copying with multi-row INSERTs, which is slower than LOAD DATA")
	}
	return w, nil
}

func (w *myWriter) close(context.Context) { w.s.Close() }

func (w *myWriter) plan(ctx context.Context, j *tableJob) (*myPlan, error) {
	if p, ok := w.plans[j.def.Name]; ok {
		return p, nil
	}
	tt, err := mysql.Inspect(ctx, w.s.Conn, j.target)
	if err != nil {
		return nil, err
	}
	mp, conv, err := mysql.Converters(j.rel, tt, w.cfg.Columns[j.def.Name], w.cfg.Policy, w.s.Maria)
	if err != nil {
		return nil, err
	}
	p := &myPlan{Plan: mp, conv: conv, hex: make([]bool, len(j.rel.Columns))}
	for _, i := range mp.Cols {
		switch tt.MySQL[mp.Targets[i].Name].DataType {
		case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "bit":
			p.hex[i] = true
		}
	}
	p.loadHead, p.loadTail = loadSQL(mp, p.hex)
	p.insertHead, p.rowMarks = insertSQL(mp)
	w.plans[j.def.Name] = p
	return p, nil
}

// loadSQL renders LOAD DATA around the reader's name.
func loadSQL(p *mapping.Plan, hexCols []bool) (head, tail string) {
	var cols, set []string
	for _, i := range p.Cols {
		name := mapping.QuoteMySQL(p.Targets[i].Name)
		if hexCols[i] {
			v := "@h" + strconv.Itoa(i)
			cols = append(cols, v)
			set = append(set, name+" = UNHEX("+v+")")
			continue
		}
		cols = append(cols, name)
	}
	tail = "' INTO TABLE " + mapping.QuoteMySQLTable(p.Target) +
		` CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\t' ESCAPED BY '\\' LINES TERMINATED BY '\n' (` +
		strings.Join(cols, ", ") + ")"
	if len(set) > 0 {
		tail += " SET " + strings.Join(set, ", ")
	}
	return "LOAD DATA LOCAL INFILE 'Reader::", tail
}

// insertSQL is "INSERT INTO t (`a`, `b`) VALUES " and "(?, ?)".
func insertSQL(p *mapping.Plan) (head, marks string) {
	names := make([]string, len(p.Cols))
	qs := make([]string, len(p.Cols))
	for n, i := range p.Cols {
		names[n] = mapping.QuoteMySQL(p.Targets[i].Name)
		qs[n] = "?"
	}
	return "INSERT INTO " + mapping.QuoteMySQLTable(p.Target) + " (" + strings.Join(names, ", ") + ") VALUES ",
		"(" + strings.Join(qs, ", ") + ")"
}

// errNoLocalInfile: the server refused LOAD DATA LOCAL.
var errNoLocalInfile = errors.New("the target does not allow LOAD DATA LOCAL")

func (w *myWriter) copy(ctx context.Context, src *srcSession, j *tableJob, t *task, prog *progress) (int64, error) {
	p, err := w.plan(ctx, j)
	if err != nil {
		return 0, err
	}
	tx, err := w.s.Conn.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("begin target transaction: %w", mysql.Describe(err))
	}
	defer tx.Rollback()

	m := newMeter(prog, j.def.Name, true)
	data, finish := copyOut(ctx, src, selectSQL(j.def, j.partitioned, p.Plan, t, false), m)
	rs := &rowSource{dec: newCopyDecoder(data), p: p}
	var rows int64
	if w.infile {
		rows, err = w.load(ctx, tx, p, rs)
	} else {
		rows, err = w.insert(ctx, tx, p, rs)
	}
	if err := finish(); err != nil {
		return 0, err
	}
	if errors.Is(err, errNoLocalInfile) {
		w.log.Info("the target refuses LOAD DATA LOCAL: copying with multi-row INSERTs, which is slower")
		w.infile = false
		return 0, errSourceAgain
	}
	if err != nil {
		return 0, err
	}
	if rows != rs.rows {
		return 0, fmt.Errorf("the target took %d of the %d rows sent (duplicate keys?)", rows, rs.rows)
	}
	if err := markDoneMySQL(ctx, tx, w.cfg.Pipeline, t, rows, m.bytes); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit the target transaction: %w", mysql.Describe(err))
	}
	m.finish(rows)
	t.Done, t.Rows, t.Bytes = true, rows, m.bytes
	return rows, nil
}

// load sends the rows with LOAD DATA LOCAL INFILE from a reader. With
// LOCAL the server turns data errors into warnings and skips duplicate
// keys, so any warning, or a row count short of what was sent, fails the
// task.
func (w *myWriter) load(ctx context.Context, tx *sql.Tx, p *myPlan, rs *rowSource) (int64, error) {
	r := &loadReader{rs: rs, p: p}
	name := fmt.Sprintf("decant-%p", r)
	gomysql.RegisterReaderHandler(name, func() io.Reader { return r })
	defer gomysql.DeregisterReaderHandler(name)
	res, err := tx.ExecContext(ctx, p.loadHead+name+p.loadTail)
	if r.err != nil && !errors.Is(r.err, io.EOF) {
		return 0, r.err // the source's or a conversion's error, not the load's
	}
	var my *gomysql.MySQLError
	if errors.As(err, &my) && (my.Number == 1148 || my.Number == 3948 || my.Number == 4166) {
		return 0, errNoLocalInfile
	}
	if err != nil {
		return 0, fmt.Errorf("load the rows: %w", mysql.Describe(err))
	}
	if err := warnings(ctx, tx); err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("load the rows: %w", err)
	}
	return n, nil
}

// warnings fails when the last statement left warnings, naming the first
// without its value.
func warnings(ctx context.Context, tx *sql.Tx) error {
	var count int
	if err := tx.QueryRowContext(ctx, "SHOW COUNT(*) WARNINGS").Scan(&count); err != nil {
		return fmt.Errorf("read the warnings of the load: %w", mysql.Describe(err))
	}
	if count == 0 {
		return nil
	}
	var level, msg string
	var code uint16
	if err := tx.QueryRowContext(ctx, "SHOW WARNINGS LIMIT 1").Scan(&level, &code, &msg); err != nil {
		return fmt.Errorf("read the warnings of the load: %w", mysql.Describe(err))
	}
	return fmt.Errorf("the target changed or refused values while loading (%d warnings, the first: %w); nothing of this task was kept",
		count, mysql.Describe(&gomysql.MySQLError{Number: code, Message: msg}))
}

// insert sends the rows as multi-row INSERTs.
func (w *myWriter) insert(ctx context.Context, tx *sql.Tx, p *myPlan, rs *rowSource) (int64, error) {
	limit := insertBytes
	if w.s.MaxPacket > 0 {
		limit = min(limit, w.s.MaxPacket/2)
	}
	var args, vals []any
	var stmt strings.Builder
	var total int64
	n, size := 0, 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		stmt.Reset()
		stmt.WriteString(p.insertHead)
		for k := range n {
			if k > 0 {
				stmt.WriteString(", ")
			}
			stmt.WriteString(p.rowMarks)
		}
		res, err := tx.ExecContext(ctx, stmt.String(), args...)
		if err != nil {
			return fmt.Errorf("insert the rows: %w", mysql.Describe(err))
		}
		got, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("insert the rows: %w", err)
		}
		total += got
		clear(args)
		args, n, size = args[:0], 0, 0
		return nil
	}
	for {
		var err error
		vals, err = rs.next(vals)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		for _, v := range vals {
			switch v := v.(type) {
			case []byte:
				args = append(args, bytes.Clone(v)) // it may share the decoder's buffer
				size += len(v)
			case string:
				args = append(args, v)
				size += len(v)
			default:
				args = append(args, v)
				size += 8
			}
		}
		if n++; n >= insertRows || size >= limit {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return total, nil
}

// rowSource decodes the source's COPY text and converts each row for the
// target.
type rowSource struct {
	dec  *copyDecoder
	p    *myPlan
	rows int64 // rows returned
}

// next returns the next row's converted values (in plan order, nil for
// NULL), reusing vals; io.EOF after the last row.
func (r *rowSource) next(vals []any) ([]any, error) {
	fields, err := r.dec.next()
	if err != nil {
		return nil, err
	}
	if len(fields) != len(r.p.Cols) {
		return nil, fmt.Errorf("the source sent a row of %d columns, want %d", len(fields), len(r.p.Cols))
	}
	vals = vals[:0]
	for n, i := range r.p.Cols {
		if fields[n] == nil {
			vals = append(vals, nil)
			continue
		}
		v, err := r.p.conv[i](fields[n])
		if err != nil {
			return nil, fmt.Errorf("column %s: %w (--on-unrepresentable null or clamp stores something else instead)", r.p.Rel.Columns[i].Name, err)
		}
		vals = append(vals, v)
	}
	r.rows++
	return vals, nil
}

// loadReader is the file LOAD DATA reads: rows rendered as LOAD DATA text
// a chunk at a time. Its error is kept: io.EOF at the end, or the source's
// or a conversion's error, which the driver reports to the server by
// ending the file early (the transaction is then rolled back).
type loadReader struct {
	rs   *rowSource
	p    *myPlan
	vals []any
	out  []byte
	off  int
	err  error
}

func (r *loadReader) Read(b []byte) (int, error) {
	for r.off == len(r.out) {
		if r.err != nil {
			return 0, r.err
		}
		r.fill()
	}
	n := copy(b, r.out[r.off:])
	r.off += n
	return n, nil
}

func (r *loadReader) fill() {
	r.out, r.off = r.out[:0], 0
	for len(r.out) < loadChunk {
		vals, err := r.rs.next(r.vals)
		if err == nil {
			r.vals = vals
			r.out, err = appendLoadRow(r.out, r.p.Cols, r.p.hex, vals)
		}
		if err != nil {
			r.err = err
			return
		}
	}
}

// appendLoadRow renders one row of converted values (by position in cols)
// as a LOAD DATA line; hex marks, by source column, values sent in hex.
func appendLoadRow(dst []byte, cols []int, hexCols []bool, vals []any) ([]byte, error) {
	for n, i := range cols {
		if n > 0 {
			dst = append(dst, '\t')
		}
		switch v := vals[n].(type) {
		case nil:
			dst = append(dst, '\\', 'N')
		case string:
			if hexCols[i] {
				dst = hex.AppendEncode(dst, []byte(v))
			} else {
				dst = appendLoadText(dst, v)
			}
		case []byte:
			if hexCols[i] {
				dst = hex.AppendEncode(dst, v)
			} else {
				dst = appendLoadText(dst, v)
			}
		case int64:
			if hexCols[i] {
				dst = hex.AppendEncode(dst, binary.BigEndian.AppendUint64(nil, uint64(v)))
			} else {
				dst = strconv.AppendInt(dst, v, 10)
			}
		case float64:
			dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
		case bool:
			dst = append(dst, "01"[b2i(v)])
		default:
			return nil, fmt.Errorf("column %d: no LOAD DATA form for a %T value", n+1, v)
		}
	}
	return append(dst, '\n'), nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
