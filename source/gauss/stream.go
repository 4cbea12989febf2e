package gauss

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

const chunkChanges = 512

// stream is one replication connection: it reads payloads, decodes them,
// assembles transactions and hands them over in commit order.
type stream struct {
	r      *Reader
	conn   *pgconn.PgConn
	req    source.StreamRequest
	out    chan<- source.Chunk
	format Format
	rels   *relations
	spool  *source.Spool
	// catalog follows the table definitions through the stream's schema
	// changes; nil unless DDL decoding is on and the target stores them.
	catalog *Catalog

	txn *source.Txn // open transaction (BEGIN seen)
	// unavailable is the first change of the open transaction that came
	// without its row: the transaction is not handed over, and its
	// COMMIT, which may bring the xid, ends the stream with it.
	unavailable *UnavailableRowError
	payloadAt   source.LSN // dataStart of the payload being handled
	// lastCSN, on a CSN-ordered slot, is the CSN of the last transaction
	// handed over (or one below the last decode position): each next one
	// must be above it.
	lastCSN  uint64
	reported uint64 // last position sent in a status update
	sentAt   time.Time
	lastData time.Time      // last payload or position message
	askedPos time.Time      // last request for a position message
	sql      *pgconn.PgConn // for position requests, opened on first need
}

func newStream(r *Reader, conn *pgconn.PgConn, req source.StreamRequest, out chan<- source.Chunk) *stream {
	return &stream{
		r: r, conn: conn, req: req, out: out,
		format:   r.Format(),
		rels:     newRelations(),
		spool:    &source.Spool{Dir: r.cfg.SpoolDir, Prefix: spillPrefix(r.cfg.Slot), Limit: r.cfg.MaxTxnMemory, Usage: r.cfg.Spill},
		lastData: time.Now(),
	}
}

func (s *stream) close(ctx context.Context) {
	s.spool.Reset()
	if s.sql != nil {
		pgsession.Close(ctx, s.sql)
	}
}

// acked is the position the target durably holds: an LSN, or the commit
// CSN on CSN-ordered slots, which the server reads from the same field.
func (s *stream) acked() uint64 {
	if s.r.cfg.Options.CSNOrder() && s.req.AckedCSN != nil {
		return s.req.AckedCSN()
	}
	return uint64(s.req.Acked())
}

func (s *stream) run(ctx context.Context) error {
	if s.r.cfg.Options.DDL() && s.r.cfg.Schema != nil {
		defs, err := s.r.cfg.Schema(ctx)
		if err != nil {
			return fmt.Errorf("load the table definitions schema changes start from: %w", err)
		}
		s.catalog = NewCatalog(defs, s.r.cfg.Tables)
	}
	if s.r.cfg.Options.SkipGenerated() {
		if err := s.readGenerated(ctx); err != nil {
			return err
		}
	}
	// A silence longer than Timeout (no data, no keepalive, even after
	// asking for one) means the server or the network in between is hung.
	quiet := source.Silence{Limit: s.r.cfg.Timeout}
	quiet.Heard(time.Now())
	for {
		if err := s.maybeReport(false); err != nil {
			return err
		}
		if err := s.maybeAskPosition(ctx); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		msg, err := s.conn.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				s.report() // a clean stop: tell the source what the target holds
				s.conn.Frontend().Send(&pgproto3.CopyDone{})
				s.conn.Frontend().Flush()
				return ctx.Err()
			}
			if pgconn.Timeout(err) {
				if err := s.silent(&quiet); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("receive from source: %w", err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if err := s.copyData(ctx, m.Data); err != nil {
				return err
			}
		case *pgproto3.ErrorResponse:
			// In serial mode an option error arrives here, after the
			// stream began.
			return fmt.Errorf("source replication stream: %w", pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyDone, *pgproto3.CommandComplete:
			return errors.New("source ended the replication stream")
		}
		// After handling it: time spent waiting for the applier is not
		// the source's silence.
		quiet.Heard(time.Now())
	}
}

// silent handles a wait that brought no message: halfway through a
// silence it asks the server for a keepalive, at the limit it gives the
// connection up.
func (s *stream) silent(quiet *source.Silence) error {
	ask, expired := quiet.Check(time.Now())
	if expired {
		s.r.log.Warn(fmt.Sprintf("no message from the source for %s; reconnecting", quiet.Limit), "slot", s.r.cfg.Slot)
		return quiet.Err()
	}
	if ask {
		s.r.log.Debug("source silent; asking for a keepalive", "slot", s.r.cfg.Slot)
		return s.status(true)
	}
	return nil
}

func (s *stream) copyData(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return errors.New("source sent an empty CopyData message")
	}
	switch data[0] {
	case 'k':
		k, err := parseKeepalive(data)
		if err != nil {
			return err
		}
		if k.ReplyRequested {
			if err := s.report(); err != nil {
				return err
			}
		}
		if s.req.WALEnd != nil {
			s.req.WALEnd(k.WALEnd) // at worst behind the source's WAL end: lag is not overstated
		}
		// In serial mode the keepalive's position is the end of what the
		// decoder processed: with no transaction open, nothing commits
		// below it unseen. In parallel mode it is the reader thread's
		// position, possibly ahead of commits still in decoder threads,
		// and must not be confirmed (gaussdb-decoding.md §5.4).
		if s.format.Style == 'm' && s.txn == nil && !s.r.cfg.Options.CSNOrder() {
			s.idleMark(k.WALEnd)
		}
		return nil
	case 'w':
		start, payload, err := parseXLogData(data)
		if err != nil {
			return err
		}
		recs, err := Decode(s.format, payload, start)
		if err != nil {
			return fmt.Errorf("decode payload at %s: %w", start, err)
		}
		s.lastData, s.payloadAt = time.Now(), start
		for i := range recs {
			if err := s.record(ctx, &recs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("source sent an unknown replication message %q", data[0])
}

// record handles one decoded record.
func (s *stream) record(ctx context.Context, r *Record) error {
	switch r.Kind {
	case KindBegin:
		if s.txn != nil {
			return fmt.Errorf("BEGIN (CSN %d) inside an open transaction", r.CSN)
		}
		s.txn = &source.Txn{Xid: r.Xid, CSN: r.CSN, ByCSN: s.r.cfg.Options.CSNOrder(), CommitTime: parseTime(r.Time)}
		s.spool.Xid, s.spool.Begin = s.txn.Xid, max(r.FirstLSN, r.LSN)
		s.unavailable = nil
		return s.spool.Reset()
	case KindInsert, KindUpdate, KindDelete:
		if s.txn == nil {
			return fmt.Errorf("%s of %s.%s outside a transaction", r.Kind, r.Schema, r.Table)
		}
		if s.unavailable != nil {
			return nil // the transaction is not handed over
		}
		if u := unavailableRow(s.format, r); u != nil {
			if u.LSN == 0 {
				u.LSN = s.payloadAt
			}
			u.Pipeline, s.unavailable = s.r.cfg.Slot, u
			return s.spool.Reset()
		}
		c, err := s.rels.change(r)
		if err != nil {
			return fmt.Errorf("xid %d: %w", s.txn.Xid, err)
		}
		return s.spool.Add(c)
	case KindCommit:
		return s.commit(ctx, r)
	case KindHeartbeat:
		s.r.log.Debug("heartbeat", "read", r.HeartbeatRead, "flush", r.HeartbeatFlush, "time", r.HeartbeatTime)
		return nil
	case KindPosition:
		s.lastData = time.Now()
		if s.txn == nil {
			return s.position(ctx, r)
		}
		return nil
	case KindDDL:
		return s.ddl(r)
	case KindTruncate:
		if s.txn == nil {
			return errors.New("TRUNCATE outside a transaction")
		}
		c := source.Change{Op: source.OpTruncate, Cascade: r.Cascade, RestartIdentity: r.RestartSeqs}
		for _, t := range r.Truncated {
			if s.r.cfg.Tables.Match(t.Schema, t.Name) {
				c.Truncated = append(c.Truncated, &source.Relation{Schema: t.Schema, Name: t.Name, Identity: source.IdentityFull})
			}
		}
		if len(c.Truncated) == 0 {
			return nil
		}
		return s.spool.Add(c)
	}
	return fmt.Errorf("unexpected %s record", r.Kind)
}

// readGenerated learns which columns are generated, from the source
// catalog: with skip-generated-columns the new tuples leave them out but
// the old tuples still carry them.
func (s *stream) readGenerated(ctx context.Context) error {
	defs, err := DescribeTables(ctx, s.r.cfg.DSN, s.r.cfg.Tables, false)
	if err != nil {
		return fmt.Errorf("read the generated columns (skip-generated-columns=true): %w", err)
	}
	s.rels.generated = map[source.TableName][]string{}
	for _, d := range defs {
		for _, c := range d.Columns {
			if c.Generated != "" {
				s.rels.generated[d.Name] = append(s.rels.generated[d.Name], c.Name)
			}
		}
	}
	return nil
}

// ddl turns a DDL record into the change it makes to the replicated
// tables, worked out from the catalog, in order with the rows around it.
func (s *stream) ddl(r *Record) error {
	if s.txn == nil {
		return fmt.Errorf("DDL outside a transaction: %.80s", r.DDL)
	}
	if r.DDL == "" {
		// openGauss's "Drop table command start" message: the drop
		// itself follows as its own message.
		s.r.log.Debug("DDL message without a statement skipped", "xid", s.txn.Xid)
		return nil
	}
	if s.catalog == nil {
		return fmt.Errorf("source sent DDL in xid %d (%.80s), but the pipeline does not replicate schema changes: run decant init --ddl to record the table definitions, or turn enable-ddl-decoding off", s.txn.Xid, r.DDL)
	}
	c, ok, err := s.catalog.Apply(r.DDL)
	if err != nil {
		return fmt.Errorf("DDL in xid %d: %w", s.txn.Xid, err)
	}
	if !ok {
		s.r.log.Debug("DDL on tables outside the selection ignored", "xid", s.txn.Xid)
		return nil
	}
	if c.DDL != nil {
		c.DDL.JSON = r.DDLJSON
	}
	return s.spool.Add(c)
}

// commit places the transaction at its commit position and hands it over.
// Formats whose COMMIT carries the end of the commit record resume right
// after it; parallel text and JSON without batching only give the commit
// record's start, so the resume point is one byte past it: the server then
// skips that transaction (its commit starts before) and keeps the next.
func (s *stream) commit(ctx context.Context, r *Record) error {
	txn := s.txn
	if txn == nil {
		return fmt.Errorf("COMMIT at %s without BEGIN", r.LSN)
	}
	s.txn = nil
	if r.HasXid {
		txn.Xid = r.Xid
	}
	if u := s.unavailable; u != nil {
		s.unavailable, u.Xid = nil, txn.Xid
		return u
	}
	if r.CSN != 0 && txn.CSN == 0 {
		txn.CSN = r.CSN
	}
	if err := s.checkCSN(txn, r.LSN); err != nil {
		return err
	}
	if txn.CommitTime.IsZero() {
		txn.CommitTime = parseTime(r.Time)
	}
	end := r.LSN
	if (s.format.Style == 't' || s.format.Style == 'j') && !s.format.Batch {
		txn.Commit, end = r.LSN, r.LSN+1
	} else if end > 0 {
		txn.Commit = end - 1
	}
	if end == 0 {
		return fmt.Errorf("COMMIT of xid %d carries no position", txn.Xid)
	}
	if s.spool.Spilled() {
		s.r.log.Info("large transaction spilled to disk", "xid", txn.Xid, "changes", s.spool.Len())
	}
	sent := 0
	err := s.spool.Replay(chunkChanges, func(cs []source.Change) error {
		sent += len(cs)
		c := source.Chunk{Txn: txn, Changes: cs}
		if sent == s.spool.Len() {
			c.Commit, c.End = true, end
		}
		return s.send(ctx, c)
	})
	if err == nil && sent == 0 {
		err = s.send(ctx, source.Chunk{Txn: txn, Commit: true, End: end})
	}
	if rerr := s.spool.Reset(); err == nil {
		err = rerr
	}
	return err
}

// send hands a chunk to the applier, reporting status while it waits.
func (s *stream) send(ctx context.Context, c source.Chunk) error {
	for {
		select {
		case s.out <- c:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(s.r.cfg.StatusInterval):
			if err := s.report(); err != nil {
				return err
			}
		}
	}
}

// position handles a decode position ('L') outside a transaction: it
// comes in stream order, so once everything before it is applied the
// checkpoint may move to it. On an LSN-ordered slot nothing commits below
// its LSN unseen; on a CSN-ordered one (both fields are CSNs) no
// transaction below its CSN. Unlike a keepalive's mark it is never dropped
// when the applier is behind: a catch-up may end at it.
func (s *stream) position(ctx context.Context, r *Record) error {
	if !s.r.cfg.Options.CSNOrder() {
		if end := source.LSN(r.PositionLSN); end > s.req.Acked() {
			return s.send(ctx, source.Chunk{End: end})
		}
		return nil
	}
	if r.PositionCSN == 0 {
		return nil // no CSN to place it by
	}
	s.lastCSN = max(s.lastCSN, r.PositionCSN-1)
	if r.PositionCSN <= s.acked() {
		return nil
	}
	return s.send(ctx, source.Chunk{CSN: r.PositionCSN})
}

// checkCSN refuses, on a CSN-ordered slot, a transaction without a CSN or
// one whose CSN is not above the one before it: the stream would be out
// of the order the checkpoint relies on, and applying or skipping it would
// both be guesses.
func (s *stream) checkCSN(txn *source.Txn, at source.LSN) error {
	if !txn.ByCSN {
		return nil
	}
	switch {
	case txn.CSN == 0:
		return fmt.Errorf("slot %s is CSN-ordered but xid %d (COMMIT at %s) came without a CSN: the stream is malformed; nothing past it is confirmed (check the server's decoding options, then run again)", s.r.cfg.Slot, txn.Xid, at)
	case txn.CSN <= s.lastCSN:
		return fmt.Errorf("slot %s is CSN-ordered but xid %d (COMMIT at %s) has CSN %d, not above the %d before it: the stream is out of CSN order; nothing past it is confirmed (report it with the server's version)", s.r.cfg.Slot, txn.Xid, at, txn.CSN, s.lastCSN)
	}
	s.lastCSN = txn.CSN
	return nil
}

// idleMark tells the applier that nothing commits below end unseen.
func (s *stream) idleMark(end source.LSN) {
	if end <= s.req.Acked() {
		return
	}
	select {
	case s.out <- source.Chunk{End: end}:
	default:
	}
}

func (s *stream) maybeReport(force bool) error {
	if !force && s.acked() == s.reported && time.Since(s.sentAt) < s.r.cfg.StatusInterval {
		return nil
	}
	return s.report()
}

// report sends the status update: every position field is the last
// position committed on the target, never a received one.
func (s *stream) report() error { return s.status(false) }

// status sends the status update, asking for an immediate keepalive when
// reply is set.
func (s *stream) status(reply bool) error {
	pos := s.acked()
	if err := s.conn.Frontend().SendUnbufferedEncodedCopyData(copyData(statusUpdate(pos, time.Now(), reply))); err != nil {
		return fmt.Errorf("send status update: %w", err)
	}
	s.reported, s.sentAt = pos, time.Now()
	return nil
}

// maybeAskPosition asks a parallel GaussDB stream with decode positions
// for a position message when it has been idle, so that the checkpoint
// (and the slot) move forward while the replicated tables are quiet.
func (s *stream) maybeAskPosition(ctx context.Context) error {
	o := s.r.cfg.Options
	if s.format.Style == 'm' || !o.DecodePosition() || s.txn != nil ||
		time.Since(s.lastData) < s.r.cfg.PositionInterval || time.Since(s.askedPos) < s.r.cfg.PositionInterval {
		return nil
	}
	s.askedPos = time.Now()
	if s.sql == nil {
		cc := s.r.conn
		cc.Replication = false
		conn, err := Connect(ctx, cc)
		if err != nil {
			return err
		}
		s.sql = conn
	}
	return s.r.bound().Do(ctx, "asking the source for a decode position", func(ctx context.Context) error {
		if _, err := s.sql.Exec(ctx, addPositionCall).ReadAll(); err != nil {
			return fmt.Errorf("ask the source for a decode position: %w", err)
		}
		return nil
	})
}

// copyData frames a client message as CopyData.
func copyData(b []byte) []byte {
	out, _ := (&pgproto3.CopyData{Data: b}).Encode(nil)
	return out
}

// parseTime reads a commit timestamp as the server prints it
// ("2025-11-22 16:09:34.531976+08"); zero when absent or unreadable.
func parseTime(s string) time.Time {
	for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00", "2006-01-02 15:04:05.999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}
