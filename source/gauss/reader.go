package gauss

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Config configures a Reader.
type Config struct {
	DSN     string // gaussdb://, opengauss:// or postgres:// URL
	Slot    string
	Options Options // validated decoding options
	// Tables is the table selection: schema changes to other tables are
	// ignored.
	Tables source.TableFilter
	// Schema loads the table definitions the target last applied, from
	// which the stream's schema changes (enable-ddl-decoding) are worked
	// out; called at every stream start. Nil: DDL in the stream stops.
	Schema func(context.Context) (map[uint32]*source.TableDef, error)
	// SpoolDir and MaxTxnMemory bound what one transaction holds in memory
	// while decant waits for its commit position (the stream announces it
	// at COMMIT); beyond it the changes spill to a file. 64 MiB when zero.
	SpoolDir     string
	MaxTxnMemory int
	// StatusInterval is the longest time between two status updates; 10 s
	// when zero.
	StatusInterval time.Duration
	// PositionInterval is how often, while idle, a parallel stream with
	// enable-decode-position asks the server for a position message
	// (gs_add_logical_decoding_position_xlog) to move the checkpoint
	// forward; 10 s when zero.
	PositionInterval time.Duration
	// Timeout is the longest the replication stream may stay silent (not
	// even a keepalive, after asking for one halfway) before the reader
	// gives the connection up with a *source.TimeoutError; it also bounds
	// setting the stream up and each other round trip. 0: no limit.
	Timeout time.Duration
	// Spill, when set, counts the spill file in use and its bytes.
	Spill  *source.SpillUsage
	Logger *slog.Logger
}

// Reader streams committed transactions from a GaussDB/openGauss slot.
type Reader struct {
	cfg  Config
	conn ConnConfig
	log  *slog.Logger
}

// NewReader validates the configuration; it does not connect.
func NewReader(cfg Config) (*Reader, error) {
	if cfg.Slot == "" {
		return nil, errors.New("gauss: a slot name is required")
	}
	cc, err := ParseDSN(cfg.DSN)
	if err != nil {
		return nil, err
	}
	cc.Replication = true
	if cfg.MaxTxnMemory <= 0 {
		cfg.MaxTxnMemory = 64 << 20
	}
	if cfg.StatusInterval <= 0 {
		cfg.StatusInterval = 10 * time.Second
	}
	if cfg.PositionInterval <= 0 {
		cfg.PositionInterval = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reader{cfg: cfg, conn: cc, log: log}, nil
}

// Format is the payload format the configured options make the server
// send.
func (r *Reader) Format() Format {
	return Format{Style: r.cfg.Options.Style(), Batch: r.cfg.Options.Batch()}
}

// Identify connects once and reports the server's identity and log end.
func (r *Reader) Identify(ctx context.Context) (srv source.Server, err error) {
	err = r.bound().Do(ctx, "identifying the source", func(ctx context.Context) error {
		conn, err := Connect(ctx, r.conn)
		if err != nil {
			return err
		}
		defer pgsession.Close(ctx, conn)
		srv, err = identify(ctx, conn)
		return err
	})
	return srv, err
}

func (r *Reader) bound() source.Bound {
	return source.Bound{Peer: "source", Setting: "--source-timeout", Timeout: r.cfg.Timeout}
}

func identify(ctx context.Context, conn *pgconn.PgConn) (source.Server, error) {
	row, err := queryRow(ctx, conn, "IDENTIFY_SYSTEM")
	if err != nil || len(row) < 3 {
		return source.Server{}, fmt.Errorf("identify source system: %w", errOr(err, "short answer"))
	}
	end, err := source.ParseLSN(row[2])
	if err != nil {
		return source.Server{}, fmt.Errorf("identify source system: %w", err)
	}
	srv := source.Server{SystemID: row[0], WALEnd: end}
	if tl, err := strconv.ParseUint(row[1], 10, 32); err == nil {
		srv.Timeline = uint32(tl)
	}
	return srv, nil
}

// slotInfo is what the source says about the slot.
type slotInfo struct {
	plugin       string
	confirmed    source.LSN
	confirmedCSN uint64
	active       bool
}

// Slot queries, one per flavour. openGauss's pg_replication_slots has no
// confirmed_csn (src/common/backend/catalog/system_views.sql, CREATE VIEW
// pg_replication_slots: slot_name … dummy_standby, confirmed_flush);
// GaussDB's has it, 0 for an LSN-ordered slot (Huawei's docs on
// pg_create_logical_replication_slot's output_order; its source is not
// public). An openGauss slot is always LSN-ordered.
const (
	slotQueryGaussDB   = "SELECT plugin, confirmed_flush, confirmed_csn, active FROM pg_replication_slots WHERE slot_name = %s"
	slotQueryOpenGauss = "SELECT plugin, confirmed_flush, active FROM pg_replication_slots WHERE slot_name = %s"
)

func readSlot(ctx context.Context, conn *pgconn.PgConn, slot string) (slotInfo, bool, error) {
	v, err := server(ctx, conn)
	if err != nil {
		return slotInfo{}, false, err
	}
	query := slotQueryGaussDB
	if v.Flavour == OpenGauss {
		query = slotQueryOpenGauss
	}
	row, err := queryRow(ctx, conn, fmt.Sprintf(query, quoteLiteral(slot)))
	if err != nil {
		return slotInfo{}, false, fmt.Errorf("read slot %s on %s: %w", slot, v, err)
	}
	if row == nil {
		return slotInfo{}, false, nil
	}
	if v.Flavour == OpenGauss {
		row = []string{row[0], row[1], "", row[2]} // confirmed_csn: none
	}
	s := slotInfo{plugin: row[0], active: row[3] == "t" || row[3] == "true"}
	if row[1] != "" {
		if s.confirmed, err = source.ParseLSN(row[1]); err != nil {
			return slotInfo{}, false, fmt.Errorf("read slot %s: %w", slot, err)
		}
	}
	if row[2] != "" {
		if s.confirmedCSN, err = strconv.ParseUint(row[2], 10, 64); err != nil {
			return slotInfo{}, false, fmt.Errorf("read slot %s: %w", slot, err)
		}
	}
	return s, true, nil
}

// checkSlot refuses a slot of the other ordering, a slot held by another
// session (source.SlotBusyError, which the pipeline waits out), and one
// that cannot stream what the target lacks (source.SlotState.Check:
// missing, or confirmed past the checkpoint the stream starts from, where
// the pipeline tells a run that moved both meanwhile from a real loss).
// GaussDB and openGauss have no wal_status, and readSlot reads only the
// columns both are known to have.
func (r *Reader) checkSlot(ctx context.Context, conn *pgconn.PgConn, srv source.Server, req source.StreamRequest) error {
	s, ok, err := readSlot(ctx, conn, r.cfg.Slot)
	if err != nil {
		return err
	}
	st := s.state(r.cfg.Slot, ok, srv)
	if ok && st.ByCSN != r.cfg.Options.CSNOrder() {
		return setupf("slot %s is ordered by %s but output-order is %s; use a slot of the matching kind",
			r.cfg.Slot, orderName(st.ByCSN), orderName(r.cfg.Options.CSNOrder()))
	}
	if s.active {
		return &source.SlotBusyError{Slot: r.cfg.Slot}
	}
	return st.Check(source.Held{Pipeline: r.cfg.Slot, Start: req.Start, StartCSN: req.StartCSN, Timeline: req.Timeline})
}

// checkServer refuses options the connected server's flavour does not
// take (Options.CheckServer), before the server would.
func (r *Reader) checkServer(ctx context.Context, conn *pgconn.PgConn) error {
	v, err := server(ctx, conn)
	if err != nil {
		return err
	}
	return r.cfg.Options.CheckServer(v)
}

// state is the slot as source.SlotState.Check judges it.
func (s slotInfo) state(slot string, exists bool, srv source.Server) source.SlotState {
	return source.SlotState{Slot: slot, Exists: exists, ByCSN: s.confirmedCSN != 0, Confirmed: s.confirmed, ConfirmedCSN: s.confirmedCSN,
		Timeline: srv.Timeline, WALEnd: srv.WALEnd}
}

// SlotState reads the slot on a connection of its own, for checks while
// a stream runs.
func (r *Reader) SlotState(ctx context.Context) (st source.SlotState, err error) {
	err = r.bound().Do(ctx, "reading the slot", func(ctx context.Context) error {
		conn, err := Connect(ctx, r.conn)
		if err != nil {
			return err
		}
		defer pgsession.Close(ctx, conn)
		srv, err := identify(ctx, conn)
		if err != nil {
			return err
		}
		s, ok, err := readSlot(ctx, conn, r.cfg.Slot)
		st = s.state(r.cfg.Slot, ok, srv)
		return err
	})
	return st, err
}

func orderName(csn bool) string {
	if csn {
		return "CSN"
	}
	return "LSN"
}

// Stream connects, starts replication from the checkpoint and delivers
// chunks until ctx ends or the connection fails.
func (r *Reader) Stream(ctx context.Context, req source.StreamRequest, out chan<- source.Chunk) (err error) {
	// Setting up, up to the start of the stream, gets Timeout in all;
	// after that the silence rule of run applies.
	ctx, setup := r.bound().Watch(ctx, "setting up the replication stream")
	defer setup.Release()
	defer func() { err = setup.Explain(err) }()
	if err := source.RemoveSpills(r.cfg.SpoolDir, spillPrefix(r.cfg.Slot)); err != nil {
		return err
	}
	cc := r.conn
	cc.Coalesce = true
	conn, err := Connect(ctx, cc)
	if err != nil {
		return err
	}
	defer pgsession.Close(ctx, conn)
	srv, err := identify(ctx, conn)
	if err != nil {
		return err
	}
	if req.SystemID != "" && srv.SystemID != req.SystemID {
		return fmt.Errorf("source system identifier is %s but the target's checkpoint was recorded from %s: decant is pointed at a different source server; fix --source, or run decant drop and init for the new source", srv.SystemID, req.SystemID)
	}
	if err := r.checkServer(ctx, conn); err != nil {
		return err
	}
	if err := r.checkSlot(ctx, conn, srv, req); err != nil {
		return err
	}
	start := req.Start
	if r.cfg.Options.CSNOrder() {
		start = 0 // the server resumes from the slot's confirmed CSN; replays are skipped by CSN
	}
	if err := startReplication(ctx, conn, r.cfg.Slot, start, r.cfg.Options.StartReplicationArgs()); err != nil {
		return err
	}
	setup.Disarm()
	r.log.Info("streaming", "slot", r.cfg.Slot, "from", start.String(), "format", r.Format().String())
	s := newStream(r, conn, req, out)
	defer s.close(ctx)
	return s.run(ctx)
}

// startReplication sends START_REPLICATION and waits for the stream to
// begin. Option errors come as an ErrorResponse before CopyBothResponse in
// parallel mode, and right after it in serial mode (the plugin parses its
// options once streaming started); the caller meets the latter as the
// first message of the stream.
func startReplication(ctx context.Context, conn *pgconn.PgConn, slot string, start source.LSN, args string) error {
	sql := fmt.Sprintf("START_REPLICATION SLOT %s LOGICAL %s", pgsession.QuoteIdent(slot), start)
	if args != "" {
		sql += " " + args
	}
	conn.Frontend().Send(&pgproto3.Query{String: sql})
	if err := conn.Frontend().Flush(); err != nil {
		return fmt.Errorf("send START_REPLICATION: %w", err)
	}
	for {
		msg, err := conn.ReceiveMessage(ctx)
		if err != nil {
			return fmt.Errorf("start replication from slot %s: %w", slot, err)
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("start replication from slot %s: %w", slot, pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyBothResponse:
			return nil
		}
	}
}

func spillPrefix(slot string) string { return "decant-" + slot + "-" }

// setupError is a source that is not set up for this pipeline.
type setupError struct{ msg string }

func (e *setupError) Error() string { return e.msg }

func setupf(format string, args ...any) error { return &setupError{fmt.Sprintf(format, args...)} }

func errOr(err error, msg string) error {
	if err != nil {
		return err
	}
	return errors.New(msg)
}

// queryRow runs a simple-protocol query and returns its first row as text
// (nil when there is none).
func queryRow(ctx context.Context, conn *pgconn.PgConn, sql string) ([]string, error) {
	res, err := conn.Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(res) == 0 || len(res[0].Rows) == 0 {
		return nil, nil
	}
	row := make([]string, len(res[0].Rows[0]))
	for i, v := range res[0].Rows[0] {
		row[i] = string(v)
	}
	return row, nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
