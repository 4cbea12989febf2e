package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// CutoverOptions are cutover's choices beyond Config.
type CutoverOptions struct {
	// Verify adds a last step that compares source and target as Verify
	// does, with VerifyOptions.
	Verify        bool
	VerifyOptions VerifyOptions
	// Reverse, when set, is the pipeline in the other direction that a
	// last step sets up (reverse.go): Config's target as its source and
	// Config's source as its target, and a pipeline name of its own; its
	// Tables are the forward pipeline's. PostgreSQL targets only.
	Reverse *Config
}

// CutoverReport is what cutover found, step by step.
type CutoverReport struct {
	Pipeline string        `json:"pipeline"`
	Steps    []CutoverStep `json:"steps"`
	OK       bool          `json:"ok"`
}

// CutoverStep is one step's outcome: Detail is its error when it failed.
type CutoverStep struct {
	Name    string   `json:"name"`
	OK      bool     `json:"ok"`
	Detail  string   `json:"detail"`
	Seconds float64  `json:"seconds"`
	Items   []string `json:"items,omitempty"`
}

// Failed names the first step that failed and why.
func (r *CutoverReport) Failed() string {
	for _, s := range r.Steps {
		if !s.OK {
			return s.Name + ": " + s.Detail
		}
	}
	return "no step ran"
}

func (r *CutoverReport) step(name string, run func() (string, []string, error)) bool {
	start := time.Now()
	detail, items, err := run()
	s := CutoverStep{Name: name, OK: err == nil, Detail: detail, Items: items, Seconds: time.Since(start).Seconds()}
	if err != nil {
		s.Detail = err.Error()
	}
	r.Steps = append(r.Steps, s)
	return s.OK
}

// Cutover says whether it is safe to switch from a PostgreSQL source to
// the target, while decant run applies the pipeline. Its steps, in this
// order and stopping at the first that fails: fence (a transactional
// logical decoding message on the source, and the source's WAL position
// after its commit); catch-up (until the target's checkpoint reaches that
// position: everything the source committed before the fence is on the
// target); sequences (each selected table's sequence positions copied to
// the target); with Verify, verify; and with Reverse, reverse (the
// pipeline in the other direction, reverse.go). ctx bounds them all. The
// error is only for a Config that does not validate, or a Reverse that
// cannot apply (a *UsageError); a step's failure is in the report.
func Cutover(ctx context.Context, cfg Config, o CutoverOptions) (*CutoverReport, error) {
	e, err := newEnv(cfg)
	if err != nil {
		return nil, err
	}
	if o.Reverse != nil {
		if err := e.checkReverse(*o.Reverse); err != nil {
			return nil, err
		}
	}
	return e.cutover(ctx, o), nil
}

// checkReverse refuses, before any step, a reverse pipeline that is not
// PostgreSQL to PostgreSQL or has no name of its own.
func (e *env) checkReverse(rc Config) error {
	switch {
	case e.cfg.MySQLTarget() || rc.MySQLTarget():
		return &UsageError{errors.New("--reverse: fallback replication is supported between PostgreSQL servers only")}
	case rc.Pipeline == "" || rc.Pipeline == e.cfg.Pipeline:
		return &UsageError{fmt.Errorf("--reverse %q: the reverse pipeline needs a name of its own, not the forward pipeline's", rc.Pipeline)}
	}
	return nil
}

func (e *env) cutover(ctx context.Context, o CutoverOptions) *CutoverReport {
	r := &CutoverReport{Pipeline: e.cfg.Pipeline}
	src, tgt, err := e.connectBoth(ctx)
	if err != nil {
		r.step("connect", func() (string, []string, error) { return "", nil, err })
		return r
	}
	defer src.Close(context.WithoutCancel(ctx))
	defer tgt.Close(context.WithoutCancel(ctx))

	var fence source.LSN
	ok := r.step("fence", func() (string, []string, error) {
		var err error
		fence, err = src.WriteFence(ctx)
		return fmt.Sprintf("written; source WAL at %s after it", fence), nil, err
	}) && r.step("catch-up", func() (string, []string, error) {
		cp, err := e.waitCheckpoint(ctx, tgt, source.Goal{LSN: fence})
		return fmt.Sprintf("target checkpoint at %s (last commit %s)", cp.End, cp.Commit), nil, err
	}) && r.step("sequences", func() (string, []string, error) {
		items, err := e.syncSequences(ctx, src, tgt)
		return fmt.Sprintf("%d synchronised", len(items)), items, err
	})
	if ok && o.Verify {
		ok = r.step("verify", func() (string, []string, error) {
			rep, err := e.verify(ctx, src, o.VerifyOptions)
			if err != nil {
				return "", nil, err
			}
			var lines []string
			for _, t := range rep.Differing() {
				lines = append(lines, t.Lines()...)
			}
			return rep.Summary(), lines, rep.Err()
		})
	}
	if ok && o.Reverse != nil {
		ok = r.step("reverse", func() (string, []string, error) {
			detail, err := e.reverse(ctx, src, *o.Reverse)
			return detail, nil, err
		})
	}
	r.OK = ok
	return r
}

// CutoverGauss is Cutover from a GaussDB or openGauss source: its steps
// are fence and catch-up (cutoverGauss); --verify and --reverse need a
// PostgreSQL source and are refused (a *UsageError).
func CutoverGauss(ctx context.Context, cfg Config, o CutoverOptions) (*CutoverReport, error) {
	if o.Verify || o.Reverse != nil {
		return nil, &UsageError{errors.New("cutover --verify and --reverse need a PostgreSQL source; from GaussDB, cutover runs the fence and the catch-up")}
	}
	e, err := newEnv(cfg)
	if err != nil {
		return nil, err
	}
	return e.cutoverGauss(ctx), nil
}

// cutoverGauss is cutover from a GaussDB source: the fence is the goal
// the source names (GaussSource.Fence: a CSN with a decode position behind
// it on a CSN-ordered slot), and the catch-up waits for the checkpoint to
// reach it. Sequences are not read from GaussDB: the report says so.
func (e *env) cutoverGauss(ctx context.Context) *CutoverReport {
	r := &CutoverReport{Pipeline: e.cfg.Pipeline}
	src, err := e.cfg.openGauss(ctx)
	if err != nil {
		r.step("connect", func() (string, []string, error) { return "", nil, err })
		return r
	}
	defer src.Close(context.WithoutCancel(ctx))
	tgt, err := e.target(ctx)
	if err != nil {
		r.step("connect", func() (string, []string, error) { return "", nil, err })
		return r
	}
	defer tgt.Close(context.WithoutCancel(ctx))
	var goal source.Goal
	r.OK = r.step("fence", func() (string, []string, error) {
		var err error
		goal, err = src.Fence(ctx)
		return fmt.Sprintf("taken at %s; sequences are not synchronised from GaussDB", goal), nil, err
	}) && r.step("catch-up", func() (string, []string, error) {
		cp, err := e.waitCheckpoint(ctx, tgt, goal)
		return fmt.Sprintf("target checkpoint at %s, CSN %d (last commit %s)", cp.End, cp.CSN, cp.Commit), nil, err
	})
	return r
}

// waitCheckpoint waits until the pipeline's checkpoint reaches the goal.
func (e *env) waitCheckpoint(ctx context.Context, tgt Admin, goal source.Goal) (checkpoint.Row, error) {
	for {
		cp, err := tgt.ReadCheckpoint(ctx, e.cfg.Pipeline)
		if err != nil {
			return cp, err
		}
		if cp.Reached(goal) {
			return cp, nil
		}
		select {
		case <-ctx.Done():
			at := cp.End.String()
			if goal.CSN != 0 {
				at = fmt.Sprintf("CSN %d", cp.CSN)
			}
			return cp, fmt.Errorf("the target's checkpoint is at %s, short of the fence at %s, when time ran out: is decant run applying pipeline %s? (--timeout)", at, goal, e.cfg.Pipeline)
		case <-time.After(e.poll):
		}
	}
}

// syncSequences sets each target sequence (or AUTO_INCREMENT) so that it
// gives next what the source's would, and says what it set. On an error
// it returns what it had set so far.
func (e *env) syncSequences(ctx context.Context, src PGSource, tgt Admin) ([]string, error) {
	tables, err := src.SelectTables(ctx, e.cfg.Tables)
	if err != nil {
		return nil, err
	}
	var seqs []source.Sequence
	for _, t := range tables {
		s, err := src.Sequences(ctx, t.Name)
		if err != nil {
			return nil, err
		}
		seqs = append(seqs, s...)
	}
	var done []string
	for _, s := range seqs {
		line, err := tgt.SyncSequence(ctx, s)
		if err != nil {
			return done, err
		}
		done = append(done, line)
	}
	return done, nil
}
