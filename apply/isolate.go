package apply

import (
	"errors"
	"fmt"

	"github.com/decant/decant/source"
)

// Stopping at the transaction the target refuses.
//
// Several source transactions may share one target transaction (a
// backlog), and a failed statement takes the whole target transaction
// with it: the checkpoint stays where the group began. If the pipeline
// stopped then, the error would name a transaction that is not the next
// one to apply, and decant skip of it would be refused. So a change the
// target refuses for good stops the pipeline only when its transaction
// is the first the target transaction held (the group's head): the
// checkpoint is then right before it. Otherwise the session ends with a
// CommitAloneError, and the next one, from the same checkpoint, commits
// each of the group's transactions in a target transaction of its own,
// every one with its checkpoint (exactly once holds as for any commit),
// until it reaches the refused one, which then fails as a head. The same
// goes for a set-based statement that failed (ReplayError): the writer
// applies the transactions change by change, and the pipeline commits
// each alone, so the change that fails is named where it stands.

// CommitAloneError ends a session whose target transaction held source
// transactions before the one the target refused: the next session
// commits them first, each on its own. It is retryable.
type CommitAloneError struct {
	Err  error
	Txns int // the source transactions the target transaction held, at most
}

func (e *CommitAloneError) Error() string {
	return fmt.Sprintf("%v; the target transaction held up to %d source transactions, so decant commits those before it first, each on its own, and stops right before the one the target refuses", e.Err, e.Txns)
}
func (e *CommitAloneError) Unwrap() error   { return e.Err }
func (e *CommitAloneError) Retryable() bool { return true }

// Replays reports whether err ends a session only so that the next one
// applies the same transactions otherwise (ReplayError, CommitAloneError):
// no fault of a connection, so it is retried at once and is nothing to
// recover from.
func Replays(err error) bool {
	var replay *ReplayError
	var alone *CommitAloneError
	return errors.As(err, &replay) || errors.As(err, &alone)
}

// isolate decides, as a session's apply loop ends on err with group g,
// how many source transactions the next session commits alone
// (Pipeline.alone), and turns a refusal behind the group's head into a
// CommitAloneError.
func (p *Pipeline) isolate(g *group, err error) error {
	n := g.txns + 1 // the complete ones, and the one being applied
	var replay *ReplayError
	if errors.As(err, &replay) {
		p.alone = n
		return err
	}
	if !refusedBehindHead(g.head, err) {
		return err
	}
	p.alone = n
	return &CommitAloneError{Err: err, Txns: n}
}

// refusedBehindHead reports whether err is the target's lasting refusal
// of a change of a source transaction other than head, the first of the
// target transaction. A checkpoint's own failure (another run applies the
// pipeline) and a streamed transaction in progress (not grouped) are not.
func refusedBehindHead(head *source.Txn, err error) bool {
	var ae *Error
	if head == nil || err == nil || Transient(err) || !errors.As(err, &ae) {
		return false
	}
	if ae.Commit == 0 || ae.Op == "checkpoint" || ae.Op == "skip" {
		return false
	}
	return ae.Commit != head.Commit || ae.Xid != head.Xid
}

// takeAlone reports whether the source transaction just complete must be
// committed on its own, and counts it.
func (p *Pipeline) takeAlone() bool {
	if p.alone == 0 {
		return false
	}
	p.alone--
	return true
}
