package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// Config tunes a Pipeline.
type Config struct {
	// CatchUp makes Run return once everything committed on the source
	// before it started is applied.
	CatchUp bool
	// Buffer is how many chunks may wait between reader and applier
	// (each at most about 1 MiB); 64 when zero.
	Buffer int
	// GroupTxns and GroupDelay bound how many source transactions, and for
	// how long, may share one target transaction while a backlog lasts;
	// 1000 and 500 ms when zero.
	GroupTxns  int
	GroupDelay time.Duration
	// IdleAdvance is how often, at most, the checkpoint moves forward on
	// the source's report that nothing else committed; 1 s when zero.
	IdleAdvance time.Duration
	// SlotWait is how long the pipeline keeps retrying while the slot is
	// held by another session (a previous run whose walsender has not yet
	// noticed that its client died); 60 s when zero.
	SlotWait time.Duration
	// Backoff is the first wait before resuming after a transient
	// failure; it doubles with each failure in a row, up to 30 s, and
	// starts again from Backoff once a session commits something. 1 s
	// when zero.
	Backoff time.Duration
	// RetryFor, when positive, bounds how long transient failures may
	// go on without a session that commits before Run gives up with a
	// *GaveUpError; 0 retries for as long as it takes.
	RetryFor time.Duration
	// SlotCheck is how often, while streaming, the pipeline reads the
	// slot on a connection of its own (a Source that is a SlotReader) and
	// stops when it can no longer stream what the target lacks: a session
	// whose stream still seems alive may be connected to a server that
	// failed over, or whose slot someone dropped or advanced. 30 s when
	// zero; never when negative.
	SlotCheck time.Duration
	// OnSlotCheck, when set, hears the outcome of every check of the
	// slot while streaming: the state read and the error that stops the
	// pipeline (nil when the slot is fine, the state's zero value when it
	// could not be read). It is where metrics and notifications hook in;
	// it runs on the checking goroutine and must not block. Observer
	// hears the same (SlotChecked) and more.
	OnSlotCheck func(source.SlotState, error)
	// OnSlotLost, when set, is called when a session finds that the slot
	// can no longer stream what the target lacks (source.LostSlot:
	// missing, invalidated, confirmed past the checkpoint), once the
	// session has ended and the target is closed: it is how decant run
	// --on-slot-lost resync repairs the target from a new slot without
	// apply knowing the workflow (cmd wires it to migrate.Resync). When it
	// returns nil, the pipeline starts a new session from the checkpoint
	// it left; a transient error is retried like a failed session (the
	// next session finds the slot unfit again and calls it again); any
	// other error stops the pipeline. Nil stops the pipeline with the
	// slot's error.
	OnSlotLost func(ctx context.Context, err error) error
	// TableSyncs, when set, reads the states of the tables decant
	// add-tables brings into the pipeline (decant.table_sync): the
	// stream waits at a change to a table still copying, and drops the
	// changes its copy holds (tablesync.go). Nil: no table is added.
	TableSyncs func(ctx context.Context) ([]checkpoint.TableSync, error)
	// Observer, when set, hears sessions, commits, positions and slot
	// checks (observe.go); it must never block. Observers fans out to
	// several.
	Observer Observer
	Logger   *slog.Logger
}

// maxBackoff bounds the wait between two sessions that failed in a row.
const maxBackoff = 30 * time.Second

// Pipeline connects one Source to one Target.
type Pipeline struct {
	cfg      Config
	src      Source
	tgt      Target
	log      *slog.Logger
	obs      Observer
	acked    atomic.Uint64 // end position of the last target commit
	ackedCSN atomic.Uint64 // and its commit CSN (CSN-ordered sources)
	// commits counts target commits; only Run's goroutine (sessions and
	// their apply loops) touches it, and the fields below.
	commits int
	// With a target that may commit asynchronously (DurableTarget), the
	// checkpoints committed but not yet known to be on its disk, oldest
	// first, and when the target last said how far it has flushed.
	durable   DurableTarget
	sync      *syncGate
	unflushed []unflushed
	flushSeen time.Time
	applied   checkpoint.Row // the last checkpoint committed (or read at a session's start)
	// queue is the session's chunk channel, whose length tells a commit
	// whether a backlog waits (Commit.Backlog); nil between sessions.
	queue <-chan source.Chunk
	// alone is how many of the next source transactions to complete are
	// each committed on their own, after a refusal (isolate.go).
	alone int
}

// unflushed is a checkpoint committed on the target and a position in the
// target's log at or past the end of its commit.
type unflushed struct {
	end source.LSN
	cp  checkpoint.Row
}

// How often the applier asks an asynchronously committing target how far
// it has flushed while checkpoints wait for it and no commit tells, and
// how long a session's end (a clean stop, a finished catch-up) waits for
// the last of them. PostgreSQL's walwriter flushes every wal_writer_delay,
// 200 ms by default, three times that at worst.
const (
	flushPoll  = 100 * time.Millisecond
	settleWait = 2 * time.Second
)

// New returns a pipeline; Run starts it.
func New(cfg Config, src Source, tgt Target) *Pipeline {
	if cfg.Buffer <= 0 {
		cfg.Buffer = 64
	}
	if cfg.GroupTxns <= 0 {
		cfg.GroupTxns = 1000
	}
	if cfg.GroupDelay <= 0 {
		cfg.GroupDelay = 500 * time.Millisecond
	}
	if cfg.IdleAdvance <= 0 {
		cfg.IdleAdvance = time.Second
	}
	if cfg.SlotWait <= 0 {
		cfg.SlotWait = 60 * time.Second
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.SlotCheck == 0 {
		cfg.SlotCheck = 30 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{cfg: cfg, src: src, tgt: tgt, log: log, obs: observer(cfg)}
	p.sync = newSyncGate(cfg.TableSyncs, log, p.obs.Beat)
	if d, ok := tgt.(DurableTarget); ok {
		p.durable = d
	}
	return p
}

// Acked is the resume position of the last target commit: the position the
// source is told is flushed (before a held prepared transaction, if any).
func (p *Pipeline) Acked() source.LSN { return source.LSN(p.acked.Load()) }

// AckedCSN is the commit CSN of the last target commit.
func (p *Pipeline) AckedCSN() uint64 { return p.ackedCSN.Load() }

func (p *Pipeline) ack(cp checkpoint.Row) {
	p.ackedCSN.Store(cp.CSN)
	p.acked.Store(uint64(cp.Resume()))
	p.obs.Acked(cp.Resume())
}

// committed records that the target committed cp, as c (its checkpoint
// and Backlog filled in here), and tells the Observer.
func (p *Pipeline) committedAs(cp checkpoint.Row, c Commit) {
	p.committed(cp)
	c.Checkpoint, c.Backlog = cp, len(p.queue) > 0
	if cc, ok := p.tgt.(ConflictCounter); ok {
		c.Conflicts = cc.TakeConflicts()
	}
	p.obs.Committed(c)
}

// committed records that the target committed cp. Only what the target
// has on disk is acknowledged: at once when it commits synchronously
// (which flushes its log, everything before the commit included), else
// once its log is flushed past the commit (never ahead).
func (p *Pipeline) committed(cp checkpoint.Row) {
	p.commits++
	p.applied = cp
	if p.durable == nil || !p.durable.Async() {
		p.ack(cp)
		p.unflushed = p.unflushed[:0]
		return
	}
	end, flushed := p.durable.LastCommit()
	p.unflushed = append(p.unflushed, unflushed{end: end, cp: cp})
	p.release(flushed)
}

// opened starts a session's acknowledgements at cp, the checkpoint the
// target holds. An asynchronous commit of it (by the session before, or a
// run before this one) is visible before it is durable, so it waits its
// turn like a new commit, at where the target's log ends now; whatever was
// waiting from the session before is behind it, and perhaps lost with a
// target crash.
func (p *Pipeline) opened(ctx context.Context, cp checkpoint.Row) error {
	p.applied = cp
	if p.durable == nil {
		p.ack(cp)
		return nil
	}
	flushed, end, err := p.durable.Flushed(ctx)
	if err != nil {
		return err
	}
	p.unflushed = append(p.unflushed[:0], unflushed{end: end, cp: cp})
	p.release(flushed)
	return nil
}

// release acknowledges the newest checkpoint whose commit ends at or
// before flushed, and forgets those before it.
func (p *Pipeline) release(flushed source.LSN) {
	p.flushSeen = time.Now()
	n := 0
	for n < len(p.unflushed) && p.unflushed[n].end <= flushed {
		n++
	}
	if n == 0 {
		return
	}
	p.ack(p.unflushed[n-1].cp)
	p.unflushed = p.unflushed[n:]
}

// pollFlushed asks the target how far it has flushed and acknowledges
// what that covers.
func (p *Pipeline) pollFlushed(ctx context.Context) error {
	flushed, _, err := p.durable.Flushed(ctx)
	if err != nil {
		return err
	}
	p.release(flushed)
	return nil
}

// settle gives the target a moment to flush what the session committed,
// so that the source hears of it before the session ends: nothing of it
// is lost then, but the next run would replay it, skipping. A target
// connection that the stop closed, or a slow flush, leaves it at that.
func (p *Pipeline) settle(ctx context.Context) {
	if p.durable == nil || len(p.unflushed) == 0 {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleWait)
	defer cancel()
	for {
		if err := p.pollFlushed(sctx); err != nil {
			p.log.Debug("could not learn how far the target has flushed", "error", err.Error())
			return
		}
		if len(p.unflushed) == 0 {
			return
		}
		select {
		case <-sctx.Done():
			p.log.Info("the target has not yet flushed every commit to disk; the source is told of those it has", "flushed", p.Acked().String(), "applied", p.applied.Resume().String())
			return
		case <-time.After(flushPoll / 2):
		}
	}
}

// errCaughtUp ends a catch-up run.
var errCaughtUp = errors.New("caught up")

// Run applies until ctx ends (a clean stop: it returns nil), a permanent
// error occurs, or, with CatchUp, the source's position at start is reached.
// Transient errors reconnect both sides with backoff and resume from the
// target's checkpoint.
func (p *Pipeline) Run(ctx context.Context) error {
	defer p.tgt.Close(ctx)
	var stopAt source.Goal // catch-up goal, fixed at the first successful start
	var busySince time.Time
	var failingSince time.Time // the start of the first session of a series that committed nothing
	started := false
	backoff := p.cfg.Backoff
	for {
		began, commits := time.Now(), p.commits
		connected := false
		err := p.recheckSlot(ctx, p.session(ctx, &stopAt, &started, &connected))
		if !slotBusy(err) {
			busySince = time.Time{}
		} else if busySince.IsZero() {
			busySince = began
		}
		end := SessionEnd{Connected: connected}
		switch {
		case errors.Is(err, errCaughtUp):
			p.obs.SessionEnded(end)
			p.log.Info("caught up", "position", p.applied.Resume().String(), "flushed", p.Acked().String())
			return nil
		case ctx.Err() != nil:
			p.obs.SessionEnded(end)
			p.log.Info("stopped", "flushed", p.Acked().String())
			return nil
		case p.cfg.OnSlotLost != nil && source.LostSlot(err):
			if err = p.resync(ctx, end, err); err == nil || ctx.Err() != nil {
				backoff, failingSince = p.cfg.Backoff, time.Time{}
				continue // the next session streams from the new slot, or sees the stop
			}
			if !Transient(err) {
				return p.ended(SessionEnd{}, err)
			}
		case !Transient(err):
			p.recordStop(ctx, p.applied.Pipeline, err)
			return p.ended(end, err)
		case !started:
			// The very first connection failed: a wrong DSN, a server that
			// is down. Say so instead of retrying in silence.
			return p.ended(end, &GaveUpError{Err: err})
		case !busySince.IsZero() && time.Since(busySince) > p.cfg.SlotWait:
			return p.ended(end, &GaveUpError{Err: fmt.Errorf("%w (another decant run, or a session that has not yet noticed its client died, still uses the slot after %s; stop the other run)", err, p.cfg.SlotWait)})
		}
		// A session that committed got through to source and target
		// alike: the fault that ended it is the first of a new series, not
		// one more of the last.
		if p.commits > commits || time.Since(began) > time.Minute {
			backoff = p.cfg.Backoff
		}
		if p.commits > commits || failingSince.IsZero() {
			failingSince = began
		}
		if p.cfg.RetryFor > 0 && time.Since(failingSince) > p.cfg.RetryFor {
			return p.ended(end, &GaveUpError{Err: fmt.Errorf("%w (still failing after %s of retries without a commit: --retry-for)", err, p.cfg.RetryFor.Round(time.Second))})
		}
		wait := backoff
		if Replays(err) {
			wait = 0 // not a fault of the connection: replay at once
		}
		if !busySince.IsZero() {
			// The previous session's walsender goes away as soon as it
			// notices its client died: look again soon.
			wait = 250 * time.Millisecond
		}
		p.obs.SessionEnded(SessionEnd{Err: err, Class: ClassTransient, Retry: true, Wait: wait, Connected: connected})
		p.log.Warn("replication interrupted; resuming from the checkpoint", "error", err.Error(), "retry_in", wait.String())
		p.tgt.Close(ctx)
		select {
		case <-ctx.Done():
			p.log.Info("stopped", "flushed", p.Acked().String())
			return nil
		case <-time.After(wait):
		}
		if busySince.IsZero() {
			backoff = min(backoff*2, maxBackoff)
		}
	}
}

// resync hands a slot that can no longer stream (lost) to OnSlotLost,
// with the target closed, and says so loudly: a warning, and the
// Observer hears the session end (a needs-person error that is dealt
// with) and the resync start and finish.
func (p *Pipeline) resync(ctx context.Context, end SessionEnd, lost error) error {
	p.obs.SessionEnded(SessionEnd{Err: lost, Class: ClassNeedsPerson, Retry: true, Connected: end.Connected})
	p.tgt.Close(ctx)
	p.log.Warn("the slot can no longer stream what the target lacks: resyncing the target from a new slot (--on-slot-lost resync)", "error", lost.Error())
	p.obs.ResyncStarted(lost)
	began := time.Now()
	err := p.cfg.OnSlotLost(ctx, lost)
	p.obs.ResyncFinished(err, time.Since(began))
	switch {
	case err == nil:
		p.log.Warn("resync done: streaming on from the new slot", "took", time.Since(began).Round(time.Millisecond).String())
		return nil
	case ctx.Err() != nil:
		p.log.Warn("stopped during the resync: the target's checkpoint stays at 0/0 until a resync finishes (run again with --on-slot-lost resync, or decant resync)", "error", err.Error())
		return err
	}
	return fmt.Errorf("resync after the slot was lost (--on-slot-lost resync): %w", err)
}

// ended tells the Observer that err stops the pipeline, and returns it.
func (p *Pipeline) ended(end SessionEnd, err error) error {
	end.Err, end.Class = err, Classify(err)
	p.obs.SessionEnded(end)
	return err
}

// session runs reader and applier once, from the target's checkpoint;
// connected is set once it reached both ends.
func (p *Pipeline) session(ctx context.Context, stopAt *source.Goal, started, connected *bool) error {
	srv, err := p.src.Identify(ctx)
	if err != nil {
		return err
	}
	cp, err := p.tgt.Open(ctx)
	if err != nil {
		return err
	}
	if cp.SystemID != srv.SystemID {
		return fmt.Errorf("source system identifier is %s but the target's checkpoint for pipeline %s was recorded from %s: decant is pointed at a different source server; fix --source, or run decant drop and init for the new source",
			srv.SystemID, cp.Pipeline, cp.SystemID)
	}
	if !*started && p.cfg.CatchUp {
		if *stopAt, err = p.goal(ctx, srv); err != nil {
			return err
		}
	}
	*started = true
	if err := p.opened(ctx, cp); err != nil {
		return err
	}
	*connected = true
	p.obs.SessionStarted(cp, srv.WALEnd)
	sk, err := p.readSkip(ctx, cp)
	if err != nil {
		return err
	}
	if err := p.sync.start(ctx); err != nil {
		return err
	}
	if p.cfg.CatchUp && cp.Reached(*stopAt) {
		// Nothing to stream, but a slot that cannot stream what comes
		// next is said now, not at the next run.
		if err := p.checkSlotOnce(ctx, cp); err != nil {
			return err
		}
		return errCaughtUp
	}

	// The reader outlives the applier, which ends first on a stop: it
	// reports the flushed position once more as it ends, after settle.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	ch := make(chan source.Chunk, p.cfg.Buffer)
	readDone := make(chan struct{})
	var readErr error
	go func() {
		defer close(readDone)
		readErr = p.src.Stream(rctx, source.StreamRequest{
			Start: cp.Resume(), SystemID: cp.SystemID, Acked: p.Acked,
			StartCSN: cp.CSN, AckedCSN: p.AckedCSN, Timeline: cp.Timeline,
			WALEnd: p.obs.SourceEnd,
		}, ch)
	}()
	slotErr, watched := p.watchSlot(rctx, cp, srv.Timeline)
	// The timeline is recorded with the first checkpoint this session
	// writes, after the reader has found the slot fit to stream: a slot
	// found missing is judged against the timeline of a session before.
	want := cp
	if srv.Timeline != 0 {
		want.Timeline = srv.Timeline
	}
	p.queue = ch
	err = p.applyLoop(ctx, cp, want, *stopAt, feed{chunks: ch, readDone: readDone, slotErr: slotErr}, sk)
	p.queue = nil
	// A stop for good settles too: what the session committed before the
	// refused transaction (isolate.go) is then acknowledged.
	if errors.Is(err, errCaughtUp) || ctx.Err() != nil || (err != nil && !Transient(err)) {
		p.settle(ctx)
	}
	cancel()
	<-readDone
	<-watched
	if errors.Is(err, errReaderDone) || (errors.Is(err, context.Canceled) && readErr != nil && !errors.Is(readErr, context.Canceled)) {
		err = readErr
	}
	return err
}

// goal is where this run's catch-up ends: the source's log end now, or
// what a GoalSource names (a CSN-ordered slot, whose stream shows no log
// end). It is taken once, at the first start, so a reconnect does not move
// it.
func (p *Pipeline) goal(ctx context.Context, srv source.Server) (source.Goal, error) {
	gs, ok := p.src.(GoalSource)
	if !ok {
		return source.Goal{LSN: srv.WALEnd}, nil
	}
	g, err := gs.Goal(ctx, srv)
	if err != nil {
		return g, fmt.Errorf("take the catch-up goal: %w", err)
	}
	p.log.Info("catching up", "goal", g.String())
	return g, nil
}

// recheckSlot judges a reader's report that the slot was confirmed past
// the checkpoint the session started from (source.SlotAheadError). That
// checkpoint was read before the slot, so a live run of the same pipeline
// may have moved both in between. A checkpoint read now, after the slot,
// is at or past what the slot confirmed unless something else consumed
// the slot (never ahead: only committed positions are ever confirmed).
// Then the session starts again from the fresh checkpoint, which counts as
// the slot being busy: another session is applying. Otherwise the gap is
// real and permanent. Other errors pass through.
func (p *Pipeline) recheckSlot(ctx context.Context, err error) error {
	var ahead *source.SlotAheadError
	if !errors.As(err, &ahead) || ctx.Err() != nil {
		return err
	}
	cp, rerr := p.tgt.Open(ctx)
	if rerr != nil {
		return fmt.Errorf("read the target's checkpoint again after the slot: %w", rerr)
	}
	if ahead.Covered(cp.Resume(), cp.CSN) {
		return &slotMovedError{ahead: *ahead, now: cp}
	}
	gap := *ahead
	gap.Start, gap.StartCSN = cp.Resume(), cp.CSN
	return &gap
}

// slotMovedError: the slot and the target's checkpoint both moved while a
// session started, so another session applies the pipeline.
type slotMovedError struct {
	ahead source.SlotAheadError
	now   checkpoint.Row
}

func (e *slotMovedError) Error() string {
	if e.ahead.ByCSN {
		return fmt.Sprintf("slot %s and the target's checkpoint moved on together (to CSN %d and CSN %d) while this run started: another session applies the pipeline",
			e.ahead.Slot, e.ahead.ConfirmedCSN, e.now.CSN)
	}
	return fmt.Sprintf("slot %s and the target's checkpoint moved on together (to %s and %s) while this run started: another session applies the pipeline",
		e.ahead.Slot, e.ahead.Confirmed, e.now.Resume())
}

// Retryable: the next session starts from the fresh checkpoint.
func (e *slotMovedError) Retryable() bool { return true }

// feed is what the apply loop waits on: the reader's chunks and its end,
// and the slot checker's verdict.
type feed struct {
	chunks   <-chan source.Chunk
	readDone <-chan struct{}
	slotErr  <-chan error
}

// errReaderDone tells session that the reader ended first.
var errReaderDone = errors.New("reader ended")

// group is the target transaction being filled.
type group struct {
	open  bool           // the target has an open transaction with our writes
	cp    checkpoint.Row // checkpoint once everything received is committed
	txns  int
	begun time.Time
	tally Tally       // the changes applied in it since the last commit
	told  int         // of txns, those a partial commit (CommitPartial) reported
	txn   *source.Txn // the source transaction being applied
	head  *source.Txn // the first source transaction since the last commit (isolate.go)
	seq   int         // how many of its changes are applied (or were before a restart)
	// midTxn: txn's last chunk, the one with its commit, is still to come.
	midTxn bool
}

// closable reports whether the group's open target transaction may commit
// now: it holds complete source transactions, and nothing of the one in
// progress (a source transaction is never split across two commits).
func (g *group) closable() bool {
	return g.open && g.txns > 0 && (!g.midTxn || g.seq == 0)
}

// applyLoop applies chunks in order until an error or the end of ctx. cp
// is what the target holds, want the same with what this session records
// (the source's timeline) once a chunk came; sk is the pending skip.
func (p *Pipeline) applyLoop(ctx context.Context, cp, want checkpoint.Row, stopAt source.Goal, f feed, sk *skipping) (err error) {
	g := group{cp: want}
	// How the session ends decides how the next one groups.
	defer func() { err = p.isolate(&g, err) }()
	stored := cp // what the target holds
	ch, readDone := f.chunks, f.readDone
	lastWrite := time.Now()
	ss := newStreaming(cp)
	// Whatever ends the session, nothing of a transaction still in
	// progress stays on the target.
	defer p.rollbackStreams(ctx)
	// A transaction without changes for the target (cutover's fence) that
	// IdleAdvance held back is written once no chunk has come for that
	// long, rather than with the next keepalive.
	advance := time.NewTimer(time.Hour)
	advance.Stop()
	defer advance.Stop()
	// While checkpoints wait for an asynchronously committing target to
	// flush, and no commit tells how far it has, the applier asks.
	poll := time.NewTimer(time.Hour)
	poll.Stop()
	defer poll.Stop()
	// An open target transaction whose every write belongs to complete
	// source transactions commits within GroupDelay of its first write,
	// whatever the chunks after it brought: a backlog left it open, and the
	// next chunk may write nothing (a replay, a part of a transaction whose
	// changes the target does not take) before the source falls silent.
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	beat := time.NewTicker(BeatInterval)
	defer beat.Stop()
	deferred := false
	// write commits the group with its checkpoint.
	write := func() error {
		deferred = false
		if err := p.commit(ctx, &g, &stored); err != nil {
			p.rollback(ctx, &g)
			return err
		}
		lastWrite = time.Now()
		if p.cfg.CatchUp && stored.Reached(stopAt) {
			return errCaughtUp
		}
		return nil
	}
	for {
		var c source.Chunk
		var pending, unflushed, grouped <-chan time.Time
		if g.closable() {
			due.Reset(max(time.Until(g.begun.Add(p.cfg.GroupDelay)), 0))
			grouped = due.C
		}
		if deferred && !g.open {
			advance.Reset(max(time.Until(lastWrite.Add(p.cfg.IdleAdvance)), 0))
			pending = advance.C
		}
		if len(p.unflushed) > 0 {
			poll.Reset(max(time.Until(p.flushSeen.Add(flushPoll)), 0))
			unflushed = poll.C
		}
		select {
		case c = <-ch:
		case now := <-beat.C:
			p.obs.Beat(now)
			continue
		case <-unflushed:
			if err := p.pollFlushed(ctx); err != nil {
				p.rollback(ctx, &g)
				return err
			}
			continue
		case <-grouped:
			// The transaction in progress, if any, wrote nothing yet: it
			// stays the one being applied.
			txn, mid := g.txn, g.midTxn
			if err := write(); err != nil {
				return err
			}
			g.txn, g.midTxn = txn, mid
			continue
		case <-pending:
			deferred = false
			if g.cp.Same(stored) {
				continue // written meanwhile
			}
			if err := write(); err != nil {
				return err
			}
			continue
		case <-readDone:
			if len(ch) > 0 {
				// Apply what the reader handed over before it ended
				// (select picks at random among ready cases): its
				// complete transactions need not be read again.
				continue
			}
			p.rollback(ctx, &g)
			return errReaderDone
		case err := <-f.slotErr:
			// Nothing further is committed, so nothing further is
			// acknowledged.
			p.rollback(ctx, &g)
			return err
		case <-ctx.Done():
			p.rollback(ctx, &g)
			return ctx.Err()
		}
		ss.passed(c)
		if c.Txn == nil || c.Txn.Streamed {
			// Either shows that a pending skip's transaction is not
			// the next one (applyOrSkip judges the others).
			if _, err := sk.judge(c, stored); err != nil {
				p.rollback(ctx, &g)
				return err
			}
		}
		if c.Txn != nil && c.Txn.Streamed {
			// In progress until its commit chunk: no commit position to
			// judge by yet (see applyStreamed).
			wrote, err := p.applyStreamed(ctx, &g, &stored, ss, c)
			if err != nil {
				p.rollback(ctx, &g)
				return err
			}
			if wrote {
				lastWrite = time.Now()
				if p.cfg.CatchUp && stored.Reached(stopAt) {
					return errCaughtUp
				}
			}
			continue
		}
		// alone: the transaction completed here commits on its own.
		alone := false
		if c.Txn == nil { // idle mark
			p.obs.SourceEnd(c.End)
			g.cp.End, g.cp.Hold = max(g.cp.End, c.End), c.Hold
			if c.CSN > 0 { // every transaction below c.CSN came before it
				g.cp.CSN = max(g.cp.CSN, c.CSN-1)
			}
		} else {
			done, err := stored.Applied(c.Txn)
			if err != nil {
				p.rollback(ctx, &g)
				return err
			}
			if done {
				continue // replayed after a restart: already on the target
			}
			if g.txn != c.Txn {
				p.obs.Received(c.Txn)
			}
			if c.Changes, err = p.gateCopies(ctx, &g, c, write); err != nil {
				if !errors.Is(err, errCaughtUp) {
					p.rollback(ctx, &g)
				}
				return err
			}
			if g.head == nil { // after gateCopies, which may commit
				g.head = c.Txn
			}
			if err := p.applyOrSkip(ctx, &g, &stored, sk, c); err != nil {
				p.rollback(ctx, &g)
				return err
			}
			g.midTxn = !c.Commit
			if !c.Commit {
				continue
			}
			p.obs.SourceEnd(c.End)
			g.cp = g.cp.After(c.Txn, c.End)
			g.cp.Hold = c.Hold
			g.txns++
			if alone = p.takeAlone(); !alone && g.open && g.txns < p.cfg.GroupTxns && backlog(ch) && time.Since(g.begun) < p.cfg.GroupDelay {
				continue // a backlog: let the next transaction share this commit
			}
		}
		// With nothing written (an idle mark, or a transaction without changes
		// for the target), the checkpoint only moves the resume position: do
		// that at most every IdleAdvance, unless catch-up waits for it.
		if !g.open && g.cp.Same(stored) {
			continue
		}
		if !alone && !g.open && time.Since(lastWrite) < p.cfg.IdleAdvance && !(p.cfg.CatchUp && g.cp.Reached(stopAt)) {
			deferred = deferred || c.Txn != nil
			continue
		}
		if err := write(); err != nil {
			return err
		}
	}
}

// backlog reports whether the reader has handed over more than the
// applier took. An empty channel is asked again after yielding: on one
// thread (run --procs 1) a reader that found the channel full waits,
// runnable, until the applier yields, and the applier would otherwise
// commit every Buffer+1 transactions however long the backlog. It yields
// twice, as the scheduler now and then (one time in 61) runs the yielding
// goroutine again first. A reader waiting for the source leaves the
// channel empty, and the group commits.
func backlog(ch <-chan source.Chunk) bool {
	for range 2 {
		if len(ch) > 0 {
			return true
		}
		runtime.Gosched()
	}
	return len(ch) > 0
}

// gateCopies returns the chunk's changes the stream applies of the
// tables add-tables brings in (syncGate). Before it waits for a copy,
// the group's complete transactions are committed (write), so that the
// target holds no transaction open while it waits.
func (p *Pipeline) gateCopies(ctx context.Context, g *group, c source.Chunk, write func() error) ([]source.Change, error) {
	wait, err := p.sync.copying(ctx, c.Changes)
	if err != nil {
		return nil, err
	}
	if wait && g.open && g.txn != c.Txn {
		if err := write(); err != nil {
			return nil, err
		}
	}
	return p.sync.filter(ctx, c.Txn, c.Changes)
}

// commit commits the group with its checkpoint and starts the next one.
func (p *Pipeline) commit(ctx context.Context, g *group, stored *checkpoint.Row) error {
	began := time.Now()
	if err := p.tgt.Commit(ctx, g.cp); err != nil {
		return err
	}
	took := time.Since(began)
	p.log.Debug("committed", "txns", g.txns, "end", g.cp.End.String())
	*stored = g.cp
	p.committedAs(*stored, Commit{Txns: g.txns - g.told, Changes: g.tally, Duration: took})
	*g = group{cp: *stored}
	return nil
}

// applyOrSkip applies a chunk's changes, or passes over them when they
// belong to the transaction a pending skip names.
func (p *Pipeline) applyOrSkip(ctx context.Context, g *group, stored *checkpoint.Row, sk *skipping, c source.Chunk) error {
	skip, err := sk.judge(c, *stored)
	if err != nil {
		return err
	}
	if !skip {
		return p.applyChunk(ctx, g, stored, c)
	}
	g.txn, g.seq = c.Txn, 0
	return p.skipChunk(ctx, g, sk, c)
}

// applyChunk applies a chunk's changes. A transaction that a restart
// finds partly applied (its first changes committed before a schema change
// on a target whose DDL commits by itself) skips what is already there.
// On such a target each schema change is preceded by a commit that records
// how far the transaction got, so that a crash after the DDL resumes
// behind it rather than applying the rows before it twice.
func (p *Pipeline) applyChunk(ctx context.Context, g *group, stored *checkpoint.Row, c source.Chunk) error {
	if g.txn != c.Txn {
		g.txn, g.seq = c.Txn, 0
	}
	changes := p.screenDDL(c.Txn, c.Changes, *stored)
	if skip := stored.Skip(c.Txn) - g.seq; skip > 0 {
		n := min(skip, len(changes))
		changes, g.seq = changes[n:], g.seq+n
	}
	splitter, splits := p.tgt.(DDLCommitter)
	bytes := c.Bytes
	if len(changes) < len(c.Changes) {
		bytes = 0 // part of the chunk: estimated from what is applied
	}
	for len(changes) > 0 {
		n := len(changes)
		if splits {
			if i := firstDDL(changes); i >= 0 {
				n = i
			}
		}
		if n > 0 {
			if err := p.applyChanges(ctx, g, c.Txn, changes[:n]); err != nil {
				return err
			}
			if n < len(changes) {
				bytes = 0
			}
			g.tally.add(changes[:n], bytes)
			changes, g.seq = changes[n:], g.seq+n
			continue
		}
		// changes[0] is a schema change on a target that commits DDL alone.
		began := time.Now()
		if err := splitter.CommitPartial(ctx, g.cp, c.Txn, g.seq); err != nil {
			return err
		}
		*stored = g.cp
		stored.PartialCommit, stored.PartialSeq = c.Txn.Commit, g.seq
		p.committedAs(*stored, Commit{Txns: g.txns - g.told, Changes: g.tally, Duration: time.Since(began)})
		g.open, g.told, g.tally, g.head = false, g.txns, Tally{}, c.Txn
		if err := p.applyChanges(ctx, g, c.Txn, changes[:1]); err != nil {
			return err
		}
		g.tally.add(changes[:1], 0)
		bytes = 0
		changes, g.seq = changes[1:], g.seq+1
	}
	return nil
}

func (p *Pipeline) applyChanges(ctx context.Context, g *group, txn *source.Txn, changes []source.Change) error {
	if !g.open {
		g.open, g.begun = true, time.Now()
	}
	return p.tgt.Apply(ctx, txn, changes)
}

func firstDDL(changes []source.Change) int {
	for i := range changes {
		if changes[i].Op == source.OpDDL {
			return i
		}
	}
	return -1
}

// rollback abandons the open target transaction; it runs during shutdown
// too, so it gets its own short deadline.
func (p *Pipeline) rollback(ctx context.Context, g *group) {
	if !g.open {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := p.tgt.Rollback(rctx); err != nil {
		p.log.Warn("rollback of the target transaction failed; the target discards it when the connection closes", "error", err.Error())
	}
	g.open = false
}

// SlotReader is a Source that can read its slot on a connection of its
// own while a stream runs.
type SlotReader interface {
	SlotState(ctx context.Context) (source.SlotState, error)
}

// watchSlot checks the slot every SlotCheck while the session streams,
// beside the apply loop, which it never blocks: the verdict that stops the
// session arrives on the returned channel, and the second one closes once
// the checker has ended (with ctx). A Source that cannot read its slot
// aside, or a negative SlotCheck, leaves the checks to each session's
// start.
func (p *Pipeline) watchSlot(ctx context.Context, cp checkpoint.Row, timeline uint32) (<-chan error, <-chan struct{}) {
	verdict, done := make(chan error, 1), make(chan struct{})
	sr, ok := p.src.(SlotReader)
	if !ok || p.cfg.SlotCheck < 0 {
		close(done)
		return verdict, done
	}
	if timeline == 0 {
		timeline = cp.Timeline
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(p.cfg.SlotCheck)
		defer tick.Stop()
		unreserved := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := p.checkSlot(ctx, sr, cp, timeline, &unreserved); err != nil {
				verdict <- err
				return
			}
		}
	}()
	return verdict, done
}

// checkSlot reads the slot once and judges it against what the target
// holds: the checkpoint the session started from, validated by the
// reader then, or what was acknowledged since, whichever is further. The
// slot's confirmed position only moves by decant's acknowledgements,
// which never pass Acked, so a slot past both was moved by something
// else. The position is read after the slot, so a commit in between only
// moves it further. A slot that cannot be read is no verdict: the stream
// itself notices a source that is gone.
func (p *Pipeline) checkSlot(ctx context.Context, sr SlotReader, cp checkpoint.Row, timeline uint32, unreserved *bool) error {
	st, err := sr.SlotState(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("could not read the slot to check it; checking again later", "error", err.Error(), "next_check_in", p.cfg.SlotCheck.String())
			p.heard(source.SlotState{}, nil)
		}
		return nil
	}
	held := source.Held{Pipeline: cp.Pipeline, Timeline: timeline, Running: true,
		Start: max(p.Acked(), cp.Resume()), StartCSN: max(p.AckedCSN(), cp.CSN)}
	verdict := st.Check(held)
	switch {
	case verdict != nil:
	case st.Unreserved() && !*unreserved:
		p.log.Warn("the source no longer reserves WAL for the slot (wal_status unreserved, past max_slot_wal_keep_size): its next checkpoint may invalidate the slot unless decant catches up first",
			"slot", st.Slot, "restart", st.Restart.String(), "confirmed", st.Confirmed.String(), "acked", held.Start.String())
	case !st.Unreserved() && *unreserved:
		p.log.Info("the source reserves WAL for the slot again", "slot", st.Slot, "wal_status", st.WALStatus)
	}
	*unreserved = st.Unreserved()
	p.heard(st, verdict)
	return verdict
}

// checkSlotOnce checks the slot against the checkpoint cp when a session
// streams nothing (a catch-up that has nothing to catch up), as the
// reader would at a stream's start.
func (p *Pipeline) checkSlotOnce(ctx context.Context, cp checkpoint.Row) error {
	sr, ok := p.src.(SlotReader)
	if !ok {
		return nil
	}
	st, err := sr.SlotState(ctx)
	if err != nil {
		return err
	}
	return st.Check(source.Held{Pipeline: cp.Pipeline, Start: cp.Resume(), StartCSN: cp.CSN, Timeline: cp.Timeline})
}

// heard tells the Observer (and OnSlotCheck) the outcome of a check.
func (p *Pipeline) heard(st source.SlotState, err error) {
	if st.WALEnd != 0 {
		p.obs.SourceEnd(st.WALEnd)
	}
	p.obs.SlotChecked(st, err)
}
