// Package gaussenc encodes gauss.Records back into the XLogData payloads a
// GaussDB or openGauss server sends (docs/gaussdb-decoding.md §1.8, §2,
// §3). It exists for tests: fixtures, round trips, and protocol stand-ins
// that play the server. It panics on records a format cannot carry.
//
// Two flavours of BEGIN/COMMIT exist and the encoder picks one per
// transaction from its BEGIN record:
//
//   - GaussDB (the default, when BEGIN has no xid): binary BEGIN has no
//     'X' tag; text COMMIT reads "COMMIT XID: n".
//   - openGauss (when BEGIN.HasXid is set): binary BEGIN carries 'X';
//     text BEGIN ends in " xid: n" and COMMIT reads "commit xid: n".
//
// Optional fields are written when set: Time ('T' tags, commit_time:,
// (at ...)), User (binary 'N'), HasOrigin ('O', origin_id:, ORIGIN_ID).
package gaussenc

import (
	"encoding/binary"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
)

// Payload is one XLogData payload and the dataStart of its header.
type Payload struct {
	DataStart source.LSN
	Data      []byte
}

// Transaction renders one transaction's records (BEGIN, changes, COMMIT) as
// the payloads the server sends: one per record without batching; with
// sending-batch one payload holding every record, ending 'P' 00000000
// (binary) or 00000000 (text, JSON), as a batch flushed by the 1-second
// timer does. DataStart follows §1.4 in simplified form: serial mppdb
// gives BEGIN its first_lsn (Record.FirstLSN, else LSN), changes and COMMIT
// their LSN; parallel formats give every payload commitStart, the commit
// record's start.
func Transaction(f gauss.Format, recs []gauss.Record, commitStart source.LSN) []Payload {
	openGauss := false
	for _, r := range recs {
		if r.Kind == gauss.KindBegin {
			openGauss = r.HasXid
		}
	}
	enc := encoder{f: f, openGauss: openGauss}
	if f.Style == 'm' {
		return enc.serial(recs)
	}
	if f.Batch {
		var data []byte
		for _, r := range recs {
			data = enc.framed(data, r)
		}
		if f.Style == 'b' {
			data = append(data, 'P')
		}
		data = binary.BigEndian.AppendUint32(data, 0)
		return []Payload{{DataStart: commitStart, Data: data}}
	}
	out := make([]Payload, 0, len(recs))
	for _, r := range recs {
		out = append(out, Payload{DataStart: commitStart, Data: enc.single(r)})
	}
	return out
}

// Heartbeat renders a bare heartbeat message (§2.6) with the terminator of
// the format: 'F' in binary, a zero length in text/JSON batches.
func Heartbeat(f gauss.Format, read, flush uint64, ts int64) []byte {
	b := []byte{'h'}
	b = binary.BigEndian.AppendUint64(b, read)
	b = binary.BigEndian.AppendUint64(b, flush)
	b = binary.BigEndian.AppendUint64(b, uint64(ts))
	return terminate(f, b)
}

// Position renders a bare decode-position message (§2.6).
func Position(f gauss.Format, csn, lsn uint64, ts uint32) []byte {
	b := []byte{'L'}
	b = binary.BigEndian.AppendUint64(b, csn)
	b = binary.BigEndian.AppendUint64(b, lsn)
	b = binary.BigEndian.AppendUint32(b, ts)
	return terminate(f, b)
}

func terminate(f gauss.Format, b []byte) []byte {
	switch {
	case f.Style == 'b':
		return append(b, 'F')
	case f.Batch:
		return binary.BigEndian.AppendUint32(b, 0)
	}
	return b
}

type encoder struct {
	f         gauss.Format
	openGauss bool
}

// serial renders mppdb_decoding payloads, one per record.
func (e encoder) serial(recs []gauss.Record) []Payload {
	out := make([]Payload, 0, len(recs))
	for _, r := range recs {
		start := r.LSN
		if r.Kind == gauss.KindBegin && r.FirstLSN != 0 {
			start = r.FirstLSN
		}
		out = append(out, Payload{DataStart: start, Data: []byte(e.mppdb(r))})
	}
	return out
}

// single renders a non-batch payload: a binary record with its 'F', or a
// bare text record.
func (e encoder) single(r gauss.Record) []byte {
	if e.f.Style == 'b' {
		return append(e.binaryRecord(nil, r), 'F')
	}
	return []byte(e.text(r))
}

// framed appends one record of a batch: binary records are separated by
// 'P'; text records get a len/lsn frame.
func (e encoder) framed(b []byte, r gauss.Record) []byte {
	if e.f.Style == 'b' {
		if len(b) > 0 {
			b = append(b, 'P')
		}
		return e.binaryRecord(b, r)
	}
	text := e.text(r)
	b = binary.BigEndian.AppendUint32(b, uint32(8+len(text)))
	b = binary.BigEndian.AppendUint64(b, uint64(r.LSN))
	return append(b, text...)
}
