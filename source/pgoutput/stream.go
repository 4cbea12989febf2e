package pgoutput

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Config configures a Reader.
type Config struct {
	DSN         string // postgres:// URL of the source database
	Slot        string // logical replication slot using pgoutput
	Publication string // publication naming the replicated tables
	// AppendOnlyPublication is the pipeline's second publication, of
	// append-only tables (publish = 'insert, truncate'); the reader
	// streams it too when it exists on the source. "" for none.
	AppendOnlyPublication string
	Pipeline              string // the pipeline, whose DDL messages the reader keeps
	// StatusInterval is the longest time between two standby status
	// updates; 10 s when zero.
	StatusInterval time.Duration
	// DescribeTypes has the reader look up user-defined column types in the
	// source catalog (on a second, ordinary connection) and set
	// Column.Info, for targets that must map them (enum labels, composite
	// fields). PostgreSQL targets take the values as they are and skip it.
	DescribeTypes bool
	// MaxTxnMemory bounds the decoded changes held in memory over every
	// transaction waiting for its commit (streamed and prepared ones);
	// past it they spill to files in SpillDir. 64 MiB when zero.
	MaxTxnMemory int
	SpillDir     string
	// StreamApply is how in-progress transactions the source streams are
	// handed over: "spool" (the default: whole, at their commit) or
	// "immediate" (as they arrive, marked Streamed).
	StreamApply string
	// NoTwoPhase leaves two-phase decoding off: prepared transactions then
	// arrive whole at COMMIT PREPARED.
	NoTwoPhase bool
	// Timeout is the longest the replication stream may stay silent, not
	// even a keepalive, before the reader gives the connection up with a
	// *source.TimeoutError (transient: the pipeline resumes from the
	// checkpoint). Halfway through a silence the reader asks the server
	// for a keepalive. It also bounds setting the stream up. 0: no limit.
	Timeout time.Duration
	// Spill, when set, counts the spill files in use and their bytes.
	Spill *source.SpillUsage
	// TargetHasSlot, for a PostgreSQL target, reports whether the target
	// holds a replication slot of that name: transactions another decant
	// pipeline applied on the source from the target (its slot is there)
	// are then not sent back (echo.go). It is called once per such
	// pipeline. Nil: every transaction is sent.
	TargetHasSlot func(ctx context.Context, slot string) (bool, error)
	Logger        *slog.Logger
}

// Validate checks the configuration without connecting.
func (c Config) Validate() error {
	if c.Slot == "" || c.Publication == "" {
		return errors.New("pgoutput: slot and publication names are required")
	}
	_, err := pgsession.ReplicationConfig(c.DSN)
	return err
}

const (
	chunkChanges = 512     // changes per chunk before it is handed over
	chunkBytes   = 1 << 20 // bytes per chunk before it is handed over
	ackPoll      = time.Second
)

// Reader streams committed transactions from a pgoutput slot.
type Reader struct {
	cfg    Config
	log    *slog.Logger
	echoes echoes
}

// NewReader returns a Reader; it does not connect.
func NewReader(cfg Config) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.StatusInterval <= 0 {
		cfg.StatusInterval = 10 * time.Second
	}
	if cfg.MaxTxnMemory <= 0 {
		cfg.MaxTxnMemory = 64 << 20
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reader{cfg: cfg, log: log, echoes: echoes{targetHasSlot: cfg.TargetHasSlot}}, nil
}

// Identify connects once and reports the server's identity and log end.
func (r *Reader) Identify(ctx context.Context) (srv source.Server, err error) {
	err = r.bound().Do(ctx, "identifying the source", func(ctx context.Context) error {
		conn, err := pgsession.ConnectReplication(ctx, r.cfg.DSN)
		if err != nil {
			return err
		}
		defer pgsession.Close(ctx, conn)
		srv, err = identify(ctx, conn)
		return err
	})
	return srv, err
}

func identify(ctx context.Context, conn *pgconn.PgConn) (source.Server, error) {
	sys, err := pglogrepl.IdentifySystem(ctx, conn)
	if err != nil {
		return source.Server{}, fmt.Errorf("identify source system: %w", err)
	}
	// IDENTIFY_SYSTEM reports the flushed end of WAL; the current insert
	// position may be ahead of it by commits not yet flushed (asynchronous
	// commit), and those count as committed too.
	end := source.LSN(sys.XLogPos)
	var cur source.LSN
	if err := queryOne(ctx, conn, "SELECT pg_current_wal_lsn()::text", func(v string) error {
		var err error
		cur, err = source.ParseLSN(v)
		return err
	}); err != nil {
		return source.Server{}, fmt.Errorf("read source WAL position: %w", err)
	}
	return source.Server{SystemID: sys.SystemID, WALEnd: max(end, cur), Timeline: uint32(sys.Timeline)}, nil
}

// Stream connects, starts replication at req.Start and delivers chunks to
// out until ctx ends (it then returns ctx.Err()) or the connection fails.
// Changes are handed over in chunks of at most chunkChanges changes or
// chunkBytes bytes, so memory does not grow with transaction size: the
// channel's capacity bounds what is buffered.
func (r *Reader) Stream(ctx context.Context, req source.StreamRequest, out chan<- source.Chunk) (err error) {
	// Setting up, up to START_REPLICATION, gets Timeout in all; after
	// that the silence rule of run applies.
	ctx, setup := r.bound().Watch(ctx, "setting up the replication stream")
	defer setup.Release()
	defer func() { err = setup.Explain(err) }()
	conn, err := pgsession.ConnectStream(ctx, r.cfg.DSN)
	if err != nil {
		return err
	}
	defer pgsession.Close(ctx, conn)

	srv, err := identify(ctx, conn)
	if err != nil {
		return err
	}
	if req.SystemID != "" && srv.SystemID != req.SystemID {
		return &SystemMismatchError{Want: req.SystemID, Got: srv.SystemID}
	}
	if err := r.checkSlot(ctx, conn, srv, req); err != nil {
		return err
	}
	if err := source.RemoveSpills(r.cfg.SpillDir, spillPrefix(r.cfg.Slot)); err != nil {
		return err
	}
	pubs, err := r.publications(ctx, conn)
	if err != nil {
		return err
	}
	proto, err := r.protocol(ctx, conn)
	if err != nil {
		return err
	}
	queue, err := r.queue(ctx, conn)
	if err != nil {
		return err
	}
	// messages: not for what they say (decant reads schema changes from
	// its queue table), but so that a DDL message, which any role can
	// write, is seen, refused and counted rather than passed over unseen.
	args := []string{fmt.Sprintf("proto_version '%d'", proto), "publication_names " + quoteLiteral(pubs), "messages 'true'"}
	if proto >= 2 {
		args = append(args, "streaming 'on'")
	}
	if proto >= 3 {
		args = append(args, "two_phase 'on'")
	}
	if err := pglogrepl.StartReplication(ctx, conn, r.cfg.Slot, pglogrepl.LSN(req.Start),
		pglogrepl.StartReplicationOptions{PluginArgs: args}); err != nil {
		return fmt.Errorf("start replication from slot %s at %s: %w", r.cfg.Slot, req.Start, err)
	}
	setup.Disarm()
	r.log.Info("streaming", "slot", r.cfg.Slot, "from", req.Start.String(), "protocol", proto)

	s := &stream{
		r:      r,
		conn:   conn,
		out:    out,
		acked:  req.Acked,
		walEnd: req.WALEnd,
		dec:    &Decoder{Pipeline: r.cfg.Pipeline, Queue: queue, rels: map[uint32]*source.Relation{}, types: map[uint32]string{}},
		asm:    newAssembler(r.cfg),
		ticker: time.NewTicker(r.cfg.StatusInterval),
	}
	s.dec.SetProtocol(proto)
	defer s.ticker.Stop()
	defer s.asm.close()
	defer s.closeCatalog(ctx)
	return s.run(ctx)
}

// queue reads the OID of the pipeline's DDL queue table (QueueOID). One
// that roles other than superusers may write is logged, not fatal: its
// rows are refused as untrusted, and the stream goes on.
func (r *Reader) queue(ctx context.Context, conn *pgconn.PgConn) (uint32, error) {
	if r.cfg.Pipeline == "" {
		return 0, nil
	}
	oid, err := QueueOID(ctx, conn, r.cfg.Pipeline)
	if errors.Is(err, ErrSetup) {
		r.log.Warn(err.Error())
		return 0, nil
	}
	return oid, err
}

func (r *Reader) bound() source.Bound {
	return source.Bound{Peer: "source", Setting: "--source-timeout", Timeout: r.cfg.Timeout}
}

// protocol picks the newest pgoutput protocol decant speaks that the
// server has: 3 (streaming and two-phase) from PostgreSQL 15 when the slot
// was made for two-phase decoding, 2 (streaming) from 14, else 1.
func (r *Reader) protocol(ctx context.Context, conn *pgconn.PgConn) (int, error) {
	var version int
	if err := queryOne(ctx, conn, "SHOW server_version_num", func(v string) error {
		var err error
		version, err = strconv.Atoi(v)
		return err
	}); err != nil {
		return 0, fmt.Errorf("read the source's version: %w", err)
	}
	twoPhase := false
	if version >= 150000 && !r.cfg.NoTwoPhase {
		q := fmt.Sprintf(`SELECT two_phase::text FROM pg_replication_slots WHERE slot_name = %s`, quoteLiteral(r.cfg.Slot))
		if err := queryOne(ctx, conn, q, func(v string) error { twoPhase = v == "true"; return nil }); err != nil {
			return 0, fmt.Errorf("read slot %s: %w", r.cfg.Slot, err)
		}
	}
	switch {
	case twoPhase:
		return 3, nil
	case version >= 140000:
		return 2, nil
	}
	return 1, nil
}

// checkSlot refuses to stream from a slot that belongs to another plugin,
// is held by another session (source.SlotBusyError, which the pipeline
// waits out), or cannot stream everything the target lacks
// (source.SlotState.Check: missing, invalidated, or confirmed past the
// checkpoint the stream starts from, where the pipeline tells a run that
// moved both meanwhile from a real loss). A slot whose WAL the source no
// longer reserves is only warned of.
func (r *Reader) checkSlot(ctx context.Context, conn *pgconn.PgConn, srv source.Server, req source.StreamRequest) error {
	st, plugin, pid, err := r.readSlot(ctx, conn, srv)
	if err != nil {
		return err
	}
	if st.Exists && plugin != "pgoutput" {
		return setupf("slot %s uses plugin %s, not pgoutput; drop it or choose another --pipeline", r.cfg.Slot, plugin)
	}
	if pid != 0 {
		return &source.SlotBusyError{Slot: r.cfg.Slot, PID: max(pid, 0)}
	}
	if err := st.Check(source.Held{Pipeline: r.cfg.Pipeline, Start: req.Start, Timeline: req.Timeline}); err != nil {
		return err
	}
	if st.Unreserved() {
		r.log.Warn("the source no longer reserves WAL for the slot (wal_status unreserved, past max_slot_wal_keep_size): its next checkpoint may invalidate the slot unless decant catches up first",
			"slot", r.cfg.Slot, "restart", st.Restart.String(), "confirmed", st.Confirmed.String(), "checkpoint", req.Start.String())
	}
	return nil
}

// publications is the publication_names list the stream asks for: the
// pipeline's publication, which must exist, and its append-only one when
// it exists (a pipeline made by an older decant has none; see
// EnsurePublications for why it gets none later).
func (r *Reader) publications(ctx context.Context, conn *pgconn.PgConn) (string, error) {
	// One value, two flags: the simple protocol reads one text each.
	q := fmt.Sprintf(`SELECT (EXISTS (SELECT 1 FROM pg_publication WHERE pubname = %s))::int::text
		|| (EXISTS (SELECT 1 FROM pg_publication WHERE pubname = %s))::int::text`,
		quoteLiteral(r.cfg.Publication), quoteLiteral(r.cfg.AppendOnlyPublication))
	var main, appendOnly bool
	if err := queryOne(ctx, conn, q, func(v string) error {
		if len(v) != 2 {
			return fmt.Errorf("unexpected answer %q", v)
		}
		main, appendOnly = v[0] == '1', v[1] == '1'
		return nil
	}); err != nil {
		return "", fmt.Errorf("read publications: %w", err)
	}
	if !main {
		return "", setupf("publication %s does not exist in the source database; run decant init", r.cfg.Publication)
	}
	names := pgsession.QuoteIdent(r.cfg.Publication)
	if appendOnly && r.cfg.AppendOnlyPublication != "" {
		names += "," + pgsession.QuoteIdent(r.cfg.AppendOnlyPublication)
	}
	return names, nil
}

// readSlot reads the slot's state, its plugin and the process holding it
// (0 when none). wal_status (PostgreSQL 13+) is read through to_jsonb, so
// that a server without the column answers "" instead of an error.
func (r *Reader) readSlot(ctx context.Context, conn *pgconn.PgConn, srv source.Server) (st source.SlotState, plugin string, pid int, err error) {
	st = source.SlotState{Slot: r.cfg.Slot, Timeline: srv.Timeline, WALEnd: srv.WALEnd, HasRestart: true}
	q := fmt.Sprintf(`SELECT plugin, coalesce(confirmed_flush_lsn::text, ''), CASE WHEN active THEN coalesce(active_pid, -1) ELSE 0 END::text,
			coalesce(restart_lsn::text, ''), coalesce(to_jsonb(s)->>'wal_status', '')
		FROM pg_replication_slots s WHERE slot_name = %s AND database = current_database()`, quoteLiteral(r.cfg.Slot))
	res, err := conn.Exec(ctx, q).ReadAll()
	if err != nil {
		return st, "", 0, fmt.Errorf("read slot %s: %w", r.cfg.Slot, err)
	}
	if len(res) == 0 || len(res[0].Rows) == 0 {
		return st, "", 0, nil
	}
	row := res[0].Rows[0]
	st.Exists, plugin, st.WALStatus = true, string(row[0]), string(row[4])
	if pid, err = strconv.Atoi(string(row[2])); err != nil {
		return st, "", 0, fmt.Errorf("read slot %s: active_pid %q: %w", r.cfg.Slot, row[2], err)
	}
	if st.Confirmed, err = parseOptionalLSN(row[1]); err == nil {
		st.Restart, err = parseOptionalLSN(row[3])
	}
	if err != nil {
		return st, "", 0, fmt.Errorf("read slot %s: %w", r.cfg.Slot, err)
	}
	return st, plugin, pid, nil
}

// parseOptionalLSN parses an LSN column, "" (NULL) being 0.
func parseOptionalLSN(v []byte) (source.LSN, error) {
	if len(v) == 0 {
		return 0, nil
	}
	return source.ParseLSN(string(v))
}

// SlotState reads the slot on a replication connection of its own, for
// checks while a stream runs (the stream's connection is busy streaming).
func (r *Reader) SlotState(ctx context.Context) (st source.SlotState, err error) {
	err = r.bound().Do(ctx, "reading the slot", func(ctx context.Context) error {
		conn, err := pgsession.ConnectReplication(ctx, r.cfg.DSN)
		if err != nil {
			return err
		}
		defer pgsession.Close(ctx, conn)
		srv, err := identify(ctx, conn)
		if err != nil {
			return err
		}
		st, _, _, err = r.readSlot(ctx, conn, srv)
		return err
	})
	return st, err
}

// stream is the state of one replication connection.
type stream struct {
	r        *Reader
	conn     *pgconn.PgConn
	out      chan<- source.Chunk
	acked    func() source.LSN
	walEnd   func(source.LSN) // nil: nobody listens
	dec      *Decoder
	asm      *assembler
	ticker   *time.Ticker
	reported source.LSN // last position sent to the source
	catalog  *pgx.Conn  // for DescribeTypes, opened on first need
}

// describe sets Info on a new relation's user-defined column types.
func (s *stream) describe(ctx context.Context, rel *source.Relation) error {
	if !s.r.cfg.DescribeTypes {
		return nil
	}
	if s.catalog == nil {
		conn, err := pgsession.Connect(ctx, s.r.cfg.DSN)
		if err != nil {
			return err
		}
		s.catalog = conn
	}
	return s.r.bound().Do(ctx, "reading column types from the source catalog", func(ctx context.Context) error {
		return describeUserTypes(ctx, s.catalog, rel)
	})
}

// describeDDL sets Info on the user-defined column types of the tables a
// schema change describes, as describe does for relations.
func (s *stream) describeDDL(ctx context.Context, d *source.DDL) error {
	if !s.r.cfg.DescribeTypes {
		return nil
	}
	for _, def := range d.Tables {
		rel := &source.Relation{Schema: def.Name.Schema, Name: def.Name.Name}
		for _, c := range def.Columns {
			rel.Columns = append(rel.Columns, source.Column{Name: c.Name, Type: c.Type, TypeMod: c.TypeMod})
		}
		if err := s.describe(ctx, rel); err != nil {
			return err
		}
		for i := range def.Columns {
			def.Columns[i].Info = rel.Columns[i].Info
		}
	}
	return nil
}

func (s *stream) closeCatalog(ctx context.Context) {
	if s.catalog != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		s.catalog.Close(cctx)
		cancel()
	}
}

// run receives until ctx ends or the stream fails. A silence longer than
// Timeout (no data, no keepalive, even after asking for one) ends it with
// a *source.TimeoutError: the server or the network in between is hung,
// and only a new connection can tell.
//
// Receiving costs no timer or context per message: a read deadline on the
// socket, renewed once per ackPoll, wakes the loop at least that often
// (while data flows too: a message cut by it is read on from where it
// stopped), and one context.AfterFunc moves the deadline to now when ctx
// ends. The loop checks the silence at those wakeups only, so silences
// are measured to within ackPoll.
func (s *stream) run(ctx context.Context) error {
	quiet := source.Silence{Limit: s.r.cfg.Timeout}
	quiet.Heard(time.Now())
	sock := s.conn.Conn()
	if err := sock.SetReadDeadline(time.Now().Add(ackPoll)); err != nil {
		return fmt.Errorf("receive from source: %w", err)
	}
	// After the first deadline, so that a ctx ended already wins over it.
	stop := context.AfterFunc(ctx, func() { sock.SetReadDeadline(time.Now()) })
	defer func() {
		stop()
		sock.SetReadDeadline(time.Time{})
	}()
	// recvCtx has no Done channel: pgconn then watches nothing per
	// message; the deadline above does its work.
	recvCtx := context.WithoutCancel(ctx)
	heard := false // a message since the last wakeup
	for {
		if err := s.maybeReport(ctx, false); err != nil {
			return err
		}
		msg, err := s.conn.ReceiveMessage(recvCtx)
		if err != nil {
			if ctx.Err() != nil {
				// A clean stop: tell the source what the target holds now.
				s.reportAtStop(ctx)
				return ctx.Err()
			}
			if !pgconn.Timeout(err) {
				return fmt.Errorf("receive from source: %w", err)
			}
			if err := s.wakeup(ctx, sock, &quiet, heard); err != nil {
				return err
			}
			heard = false
			continue
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if err := s.copyData(ctx, m.Data); err != nil {
				return err
			}
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("source replication stream: %w", pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyDone:
			return errors.New("source ended the replication stream")
		}
		// After handling it: time spent waiting for the applier is not
		// the source's silence.
		heard = true
	}
}

// wakeup runs when the read deadline passed: it renews the deadline and
// checks the silence, which a message since the last wakeup (heard) ends.
func (s *stream) wakeup(ctx context.Context, sock net.Conn, quiet *source.Silence, heard bool) error {
	now := time.Now()
	if err := sock.SetReadDeadline(now.Add(ackPoll)); err != nil {
		return fmt.Errorf("receive from source: %w", err)
	}
	if ctx.Err() != nil {
		// ctx ended since the read failed and its AfterFunc's deadline
		// was just overwritten: let the next read stop at once.
		return sock.SetReadDeadline(now)
	}
	select {
	case <-s.ticker.C:
		if err := s.report(ctx); err != nil {
			return err
		}
	default:
	}
	if heard {
		quiet.Heard(now)
		return nil
	}
	return s.silent(ctx, quiet)
}

// silent handles a wait that brought no message: halfway through a
// silence it asks the server for a keepalive (a healthy idle walsender
// answers at once), at the limit it gives the connection up.
func (s *stream) silent(ctx context.Context, quiet *source.Silence) error {
	ask, expired := quiet.Check(time.Now())
	if expired {
		s.r.log.Warn(fmt.Sprintf("no message from the source for %s; reconnecting", quiet.Limit), "slot", s.r.cfg.Slot)
		return quiet.Err()
	}
	if ask {
		s.r.log.Debug("source silent; asking for a keepalive", "slot", s.r.cfg.Slot)
		return s.status(ctx, true)
	}
	return nil
}

func (s *stream) copyData(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return fmt.Errorf("%w: empty CopyData", ErrMalformed)
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		k, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return fmt.Errorf("%w: keepalive: %v", ErrMalformed, err)
		}
		if s.r.log.Enabled(ctx, slog.LevelDebug) {
			s.r.log.Debug("keepalive", "wal_end", source.LSN(k.ServerWALEnd).String(), "reply", k.ReplyRequested, "in_txn", s.dec.InTxn())
		}
		if k.ReplyRequested {
			if err := s.maybeReport(ctx, true); err != nil {
				return err
			}
		}
		if s.walEnd != nil {
			s.walEnd(source.LSN(k.ServerWALEnd))
		}
		s.idleMark(source.LSN(k.ServerWALEnd))
		return nil
	case pglogrepl.XLogDataByteID:
		// XLogData: Int64 WAL position of the data, Int64 end of the
		// server's WAL, Int64 server time, then the pgoutput message.
		// Read here rather than by pglogrepl.ParseXLogData, which also
		// converts the time, unused, for every message.
		const header = 1 + 8 + 8 + 8
		if len(data) < header {
			return fmt.Errorf("%w: XLogData of %d bytes, shorter than its header", ErrMalformed, len(data))
		}
		ev, err := s.dec.Decode(data[header:])
		if err != nil {
			return fmt.Errorf("decode message at %s: %w", source.LSN(binary.BigEndian.Uint64(data[1:])), err)
		}
		return s.event(ctx, ev)
	}
	return fmt.Errorf("%w: unknown CopyData message %q", ErrMalformed, data[0])
}

// idleMark tells the applier that nothing commits below end that it has not
// seen. Only valid between transactions: inside one, the walsender may
// already have read the commit record of the transaction it is sending.
// The mark is dropped when the applier is busy; it is a hint, not data.
func (s *stream) idleMark(end source.LSN) {
	if s.dec.InTxn() || s.dec.InStream() || end <= s.acked() {
		return
	}
	select {
	case s.out <- source.Chunk{End: end, Hold: s.asm.hold()}:
	default:
	}
}

func changeBytes(c *source.Change) int {
	n := 64
	for _, v := range c.Old {
		n += 24 + len(v.Data)
	}
	for _, v := range c.New {
		n += 24 + len(v.Data)
	}
	return n
}

// send hands a chunk to the applier. While the applier is behind and the
// channel is full, it keeps reporting status so the source does not time
// the connection out, and says that it waits.
func (s *stream) send(ctx context.Context, c source.Chunk) error {
	c.Hold = s.asm.hold()
	select {
	case s.out <- c:
		return nil
	default:
	}
	start := time.Now()
	for {
		select {
		case s.out <- c:
			if waited := time.Since(start); waited > 5*time.Second {
				s.r.log.Info("applier caught up with reader", "waited", waited.Round(time.Millisecond).String())
			}
			return nil
		case <-ctx.Done():
			// The applier ended: tell the source what the target holds
			// now, as a stop while receiving does.
			s.reportAtStop(ctx)
			return ctx.Err()
		case <-s.ticker.C:
			s.r.log.Debug("reader waiting for applier", "waiting", time.Since(start).Round(time.Second).String())
			if err := s.report(ctx); err != nil {
				return err
			}
		}
	}
}

// maybeReport sends a standby status update when the applied position moved
// (or always, when force is set). It runs before every receive, so it
// costs one atomic load; the interval's updates are sent from wakeup.
func (s *stream) maybeReport(ctx context.Context, force bool) error {
	if !force && s.acked() == s.reported {
		return nil
	}
	return s.report(ctx)
}

// report sends the status update. Write, flush and apply positions are all
// the last position committed on the target, never the received position:
// the source may then recycle WAL only for work the target durably has.
func (s *stream) report(ctx context.Context) error { return s.status(ctx, false) }

// reportAtStop reports as the stream stops (ctx is done), on a short
// deadline of its own: a source that no longer reads must not hold the
// stop up.
func (s *stream) reportAtStop(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	s.report(rctx)
}

// status sends the status update, asking the server to answer at once
// with a keepalive when reply is set.
func (s *stream) status(ctx context.Context, reply bool) error {
	pos := s.acked()
	err := pglogrepl.SendStandbyStatusUpdate(ctx, s.conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: pglogrepl.LSN(pos),
		WALFlushPosition: pglogrepl.LSN(pos),
		WALApplyPosition: pglogrepl.LSN(pos),
		ReplyRequested:   reply,
	})
	if err != nil {
		return fmt.Errorf("send standby status: %w", err)
	}
	s.reported = pos
	return nil
}

// SystemMismatchError means the source is another database cluster than the
// one the checkpoint was recorded against.
type SystemMismatchError struct{ Want, Got string }

func (e *SystemMismatchError) Error() string {
	return fmt.Sprintf("source system identifier is %s but the target's checkpoint was recorded from %s: decant is pointed at a different source server; fix --source, or run decant drop and init for the new source", e.Got, e.Want)
}

// ErrSetup marks a source that is not set up for this pipeline (errors.Is).
var ErrSetup = errors.New("source not set up")

// setupError is an ErrSetup whose text is only its own message.
type setupError struct{ msg string }

func (e *setupError) Error() string        { return e.msg }
func (e *setupError) Is(target error) bool { return target == ErrSetup }

func setupf(format string, args ...any) error {
	return &setupError{fmt.Sprintf(format, args...)}
}
