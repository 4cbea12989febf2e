package gaussstub

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
	"github.com/decant/decant/source/gauss/gaussenc"
)

// startReplication runs START_REPLICATION (spec §1.3). Errors before the
// CopyBothResponse leave the session usable; once streaming, the session
// ends with the stream.
func (c *session) startReplication(q string) error {
	cmd, err := parseStartReplication(q)
	if err != nil {
		return c.sqlError("42601", err.Error())
	}
	n, err := cmd.parallelDecodeNum()
	if err != nil {
		return c.sqlError("22023", err.Error())
	}
	if n > 1 {
		return c.startParallel(cmd)
	}
	return c.startSerial(cmd)
}

// startParallel: slot check, option validation, then CopyBothResponse, so
// every error arrives as a plain ErrorResponse before 'W'.
func (c *session) startParallel(cmd startCmd) error {
	s := c.srv
	s.mu.Lock()
	sl, ok := s.slots[cmd.slot]
	csn := ok && sl.csn
	s.mu.Unlock()
	if !ok {
		return c.sqlError("XX000", "Invalid logical replication slot "+cmd.slot+".")
	}
	opts, err := cmd.validate(c.srv.flavour, true, csn)
	if err != nil {
		return c.sqlError("22023", err.Error())
	}
	st, err := c.acquire(cmd, opts)
	if err != nil {
		return c.sqlError("55006", err.Error())
	}
	defer st.release()
	if err := c.send(&pgproto3.CopyBothResponse{}); err != nil {
		return err
	}
	st.run()
	return errClosed
}

// startSerial: the slot is acquired, CopyBothResponse goes out, and only
// then does the plugin parse its options: an option error arrives after
// 'W' and ends the connection.
func (c *session) startSerial(cmd startCmd) error {
	s := c.srv
	s.mu.Lock()
	sl, ok := s.slots[cmd.slot]
	csn := ok && sl.csn
	s.mu.Unlock()
	if !ok {
		return c.sqlError("42704", `replication slot "`+cmd.slot+`" does not exist`)
	}
	st, err := c.acquire(cmd, sessionOptions{})
	if err != nil {
		return c.sqlError("55006", err.Error())
	}
	defer st.release()
	if err := c.send(&pgproto3.CopyBothResponse{}); err != nil {
		return err
	}
	opts, err := cmd.validate(c.srv.flavour, false, csn)
	if err != nil {
		c.send(&pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "22023", Message: err.Error()})
		return errClosed
	}
	st.opts = opts
	st.run()
	return errClosed
}

// streamer is one replication session's sending state.
type streamer struct {
	c      *session
	slot   string
	csn    bool // CSN-ordered slot
	opts   sessionOptions
	format gauss.Format

	// What the session wants (§5.2): LSN mode, commit start >= startLSN;
	// CSN mode, CSN > startCSN. Fixed when the session starts.
	startLSN source.LSN
	startCSN uint64

	next        int        // next script item to look at
	lastSentEnd source.LSN // commit end of the last transaction sent
	lastSentCSN uint64
	keepalives  int
	replyNow    chan struct{} // the client asked for a keepalive
	confirmed   chan struct{} // the client confirmed a position
}

// acquire marks the slot active and fixes the session's start point.
func (c *session) acquire(cmd startCmd, opts sessionOptions) (*streamer, error) {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, ok := s.slots[cmd.slot]
	if !ok {
		return nil, fmt.Errorf(`replication slot "%s" does not exist`, cmd.slot)
	}
	if sl.active {
		return nil, fmt.Errorf(`replication slot "%s" is already active`, cmd.slot)
	}
	sl.active = true
	return &streamer{
		c: c, slot: cmd.slot, csn: sl.csn, opts: opts,
		startLSN: max(cmd.start, sl.confirmedFlush), startCSN: sl.confirmedCSN,
		replyNow: make(chan struct{}, 1), confirmed: make(chan struct{}, 1),
	}, nil
}

func (st *streamer) release() {
	s := st.c.srv
	s.mu.Lock()
	if sl, ok := s.slots[st.slot]; ok {
		sl.active = false
	}
	s.mu.Unlock()
}

// run streams until the client leaves or the connection is cut. The
// client's messages are read by a second goroutine, which run waits for.
func (st *streamer) run() {
	st.format = gauss.Format{Style: 'm'}
	if st.opts.parallel {
		st.format = gauss.Format{Style: st.opts.style, Batch: st.opts.batch}
	}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		st.readReplies()
	}()
	defer func() {
		st.c.conn.Close()
		<-readerDone
	}()
	tick := time.NewTicker(st.c.srv.cfg.KeepaliveInterval)
	defer tick.Stop()
	for {
		st.c.srv.mu.Lock()
		changed := st.c.srv.changed
		st.c.srv.mu.Unlock()
		if err := st.sendPending(); err != nil {
			return
		}
		st.autoAdvance()
		var err error
		select {
		case <-readerDone:
			return
		case <-changed:
		case <-st.confirmed: // auto-advance may move the slot now
		case <-st.replyNow:
			err = st.keepalive(false)
		case <-tick.C:
			st.keepalives++
			err = st.keepalive(st.keepalives%5 == 0)
			if err == nil && st.opts.heartbeat {
				err = st.sendHeartbeat()
			}
		}
		if err != nil {
			return
		}
	}
}

// sendPending sends the script items appended since the last call that
// this session wants. In parallel mode a keepalive carrying the reader's
// position (the script end) goes out first: the real parallel reader runs
// ahead of the decoders, and a client that confirms that walEnd skips the
// transactions still to come (spec §5.4).
func (st *streamer) sendPending() error {
	s := st.c.srv
	s.mu.Lock()
	items := s.items[st.next:]
	st.next = len(s.items)
	s.mu.Unlock()
	if len(items) == 0 {
		return nil
	}
	if st.opts.parallel {
		if err := st.keepalive(false); err != nil {
			return err
		}
	}
	for _, it := range items {
		var msgs []pgproto3.BackendMessage
		switch {
		case it.txn != nil && st.wants(it.txn):
			msgs = st.txnMessages(it.txn)
			st.lastSentEnd, st.lastSentCSN = it.txn.CommitEnd, it.txn.CSN
		case it.pos != nil && st.opts.decodePosition && st.wantsPosition(it.pos):
			msgs = []pgproto3.BackendMessage{st.positionMessage(it.pos)}
		}
		if len(msgs) == 0 {
			continue
		}
		if err := st.c.send(msgs...); err != nil {
			return err
		}
	}
	return nil
}

// positionMessage encodes a decode position (§2.6): its CSN, then its LSN
// on an LSN slot or its CSN again on a CSN slot (the seed: "当解码为CSN序时，
// 表示发送解码位置日志时对应的CSN值"), where the header carries the CSN too.
func (st *streamer) positionMessage(p *position) pgproto3.BackendMessage {
	second, ds := p.lsn, source.LSN(p.lsn)
	if st.csn {
		second, ds = p.csn, source.LSN(p.csn)
	}
	return xlogData(ds, gaussenc.Position(st.format, p.csn, second, uint32(time.Now().Unix())))
}

func (st *streamer) wants(t *Txn) bool {
	if st.csn {
		return t.CSN > st.startCSN
	}
	return t.CommitStart >= st.startLSN
}

func (st *streamer) wantsPosition(p *position) bool {
	if st.csn {
		return p.csn > st.startCSN
	}
	return source.LSN(p.lsn) >= st.startLSN
}

// txnMessages encodes one transaction in the session's format. Without
// include-xids the records lose their xids, without include-timestamp
// their commit times. On a CSN slot the header's dataStart carries the CSN
// (spec §1.4, inferred from the JDBC documentation).
func (st *streamer) txnMessages(t *Txn) []pgproto3.BackendMessage {
	recs := make([]gauss.Record, len(t.Records))
	copy(recs, t.Records)
	for i := range recs {
		if !st.opts.includeXids {
			recs[i].Xid, recs[i].HasXid = 0, false
		}
		if !st.opts.includeTimestamp {
			recs[i].Time = ""
		}
	}
	var msgs []pgproto3.BackendMessage
	for _, p := range gaussenc.Transaction(st.format, recs, t.CommitStart) {
		ds := p.DataStart
		if st.csn {
			ds = source.LSN(t.CSN)
		}
		msgs = append(msgs, xlogData(ds, p.Data))
	}
	return msgs
}

// walEnd is what a keepalive reports. Serial mode: the end of what was
// sent (the script end once everything is out). Parallel mode: the
// reader's position, the script end, even if transactions are unsent.
func (st *streamer) walEnd() source.LSN {
	s := st.c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.opts.parallel || st.next == len(s.items) {
		return s.end
	}
	return max(st.lastSentEnd, st.startLSN)
}

func (st *streamer) keepalive(replyRequested bool) error {
	return st.c.send(&pgproto3.CopyData{Data: keepaliveMessage(st.walEnd(), time.Now(), replyRequested)})
}

// sendHeartbeat sends an 'h' payload (spec §2.6). LSN slot: WAL read and
// WAL flushed, both the script end here. CSN slot: the CSN of the last sent
// transaction and the CSN the next commit will get. The timestamp is Unix
// microseconds, as in the spec's fixture (its unit is unverified).
func (st *streamer) sendHeartbeat() error {
	s := st.c.srv
	s.mu.Lock()
	end, read, flush := s.end, uint64(s.end), uint64(s.end)
	if st.csn {
		read, flush = st.lastSentCSN, s.maxCSN+1
	}
	s.mu.Unlock()
	return st.c.send(xlogData(end, gaussenc.Heartbeat(st.format, read, flush, time.Now().UnixMicro())))
}

// autoAdvance is the server side of auto-advance=true: once everything
// sent is confirmed and nothing is pending, the slot moves to the end of
// the script (the highest CSN on a CSN slot).
func (st *streamer) autoAdvance() {
	if !st.opts.autoAdvance {
		return
	}
	s := st.c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, ok := s.slots[st.slot]
	if !ok || st.next != len(s.items) {
		return
	}
	if st.csn {
		if sl.confirmedCSN >= st.lastSentCSN {
			sl.confirmedCSN = max(sl.confirmedCSN, s.maxCSN)
		}
		return
	}
	if sl.confirmedFlush >= st.lastSentEnd {
		sl.confirmedFlush = max(sl.confirmedFlush, s.end)
	}
}

// readReplies handles the client's messages while streaming (spec §1.6).
func (st *streamer) readReplies() {
	c := st.c
	for {
		msg, err := c.be.Receive()
		if err != nil {
			return
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if len(m.Data) == 0 || m.Data[0] != 'r' {
				continue // 'h' hot standby feedback is for physical replication
			}
			if err := st.statusUpdate(m.Data); err != nil {
				c.conn.Close()
				return
			}
		case *pgproto3.CopyDone, *pgproto3.Terminate:
			// The walsender exits at once; there is no CopyDone echo.
			c.conn.Close()
			return
		}
	}
}

// statusUpdate applies a 65-byte 'r'. Anything shorter fails the way
// pq_copymsgbytes does on the real server.
func (st *streamer) statusUpdate(b []byte) error {
	s := st.c.srv
	s.mu.Lock()
	s.received = append(s.received, append([]byte(nil), b...))
	s.mu.Unlock()
	if len(b) != statusUpdateLen {
		return st.c.fatal("08P01", "insufficient data left in message")
	}
	flush := binary.LittleEndian.Uint64(b[17:])
	s.mu.Lock()
	if sl, ok := s.slots[st.slot]; ok {
		if st.csn {
			sl.confirmedCSN = max(sl.confirmedCSN, flush)
		} else {
			sl.confirmedFlush = max(sl.confirmedFlush, source.LSN(flush))
		}
	}
	s.mu.Unlock()
	signal(st.confirmed)
	if b[57] != 0 {
		signal(st.replyNow)
	}
	return nil
}

// signal wakes the goroutine waiting on ch without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
