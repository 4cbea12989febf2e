package notify

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/decant/decant/source/pgsession"
)

// Kind names what happened. The set is closed: a receiver may switch on it.
type Kind string

// The event kinds, in the order an operator meets them.
const (
	// PipelineStopped: run or migrate stopped on an error (the message is
	// the final error line, with lsn, xid and table when the error names
	// them).
	PipelineStopped Kind = "pipeline_stopped"
	// Recovered: streaming again after a transient failure.
	Recovered Kind = "recovered"
	// LagHigh: the replication lag passed the alert threshold; sent once,
	// then nothing until LagOK.
	LagHigh Kind = "lag_high"
	// LagOK: the lag is back under the threshold after a LagHigh.
	LagOK Kind = "lag_ok"
	// SlotUnreserved: the source no longer reserves WAL for the slot
	// (wal_status unreserved): it may invalidate it at its next checkpoint.
	SlotUnreserved Kind = "slot_unreserved"
	// SlotLost: the source invalidated the slot (wal_status lost).
	SlotLost Kind = "slot_lost"
	// ResyncStarted: run --on-slot-lost resync found the slot unable to
	// stream what the target lacks (the message says why) and repairs
	// the target from a new slot.
	ResyncStarted Kind = "resync_started"
	// ResyncFinished: that repair ended: streaming goes on, or the
	// message says why it failed.
	ResyncFinished Kind = "resync_finished"
	// CopyFinished: the initial copy of init --copy, copy or migrate ended.
	CopyFinished Kind = "copy_finished"
	// CutoverSafe and CutoverUnsafe: cutover's verdict.
	CutoverSafe   Kind = "cutover_safe"
	CutoverUnsafe Kind = "cutover_unsafe"
	// DDLRejected: a schema change in the stream was refused and not
	// applied (not written by decant's capture, or the pipeline was
	// initialised without --ddl); streaming goes on. LSN and Xid name
	// the transaction; nothing of the event's content is sent.
	DDLRejected Kind = "ddl_rejected"
)

// Kinds is every kind, for documentation and tests.
var Kinds = []Kind{PipelineStopped, Recovered, LagHigh, LagOK, SlotUnreserved, SlotLost, ResyncStarted, ResyncFinished, CopyFinished, CutoverSafe, CutoverUnsafe, DDLRejected}

// Event is one notification, POSTed as this JSON object. Send fills ID,
// Seq, Time and Pipeline; the rest is the caller's.
type Event struct {
	// ID is unique per event and the same on every attempt to deliver it,
	// and goes in the Idempotency-Key header too: receivers dedupe by it.
	ID string `json:"id"`
	// Seq increases by one per event within one decant process (it starts
	// at 1 again after a restart); a gap means events were dropped.
	Seq      uint64    `json:"seq"`
	Kind     Kind      `json:"kind"`
	Pipeline string    `json:"pipeline"`
	Time     time.Time `json:"time"`
	// Message is one line for a person, cleaned by Sanitize.
	Message string `json:"message"`
	// Where it happened, when known: the commit LSN, the source
	// transaction id, the table (schema.table).
	LSN   string `json:"lsn,omitempty"`
	Xid   uint64 `json:"xid,omitempty"`
	Table string `json:"table,omitempty"`
	// LagSeconds is the lag measured, on lag_high and lag_ok.
	LagSeconds *float64 `json:"lag_seconds,omitempty"`
	// WALStatus is the slot's wal_status, on slot_unreserved and slot_lost.
	WALStatus string `json:"wal_status,omitempty"`
}

// At is where an event happened; each field is optional.
type At struct {
	LSN   string
	Xid   uint64
	Table string
}

// newID is a random UUID (version 4).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it aborts the process instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// maxMessage bounds a message; a longer one is cut at a character
// boundary and ends in "…".
const maxMessage = 1024

// Sanitize makes text fit for an event's message: no passwords
// (pgsession.Redact, decant's one redaction: those of URLs, MySQL driver
// DSNs and password=, token=, secret=... pairs become xxxxx), one line
// (line breaks and tabs become spaces) and at most 1 KiB. Row values are
// kept out earlier: the messages come from decant's errors, which never
// quote them.
func Sanitize(text string) string {
	s := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, pgsession.Redact(text))
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxMessage {
		cut := maxMessage - len("…")
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
