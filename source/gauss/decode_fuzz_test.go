package gauss

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// The fuzz targets feed arbitrary payloads to Decode, with and without
// batching. Their corpus is checked in under testdata/fuzz/<Name>/ (built
// from the spec's fixtures); run one with
//
//	go test ./source/gauss -run '^$' -fuzz FuzzDecodeBinary -fuzztime 30s
//
// Decode must not panic, must fail only with a *DecodeError whose offset
// lies within the payload, and must not alias the payload.

func FuzzDecodeBinary(f *testing.F) { fuzzDecode(f, 'b') }
func FuzzDecodeText(f *testing.F)   { fuzzDecode(f, 't') }
func FuzzDecodeJSON(f *testing.F)   { fuzzDecode(f, 'j') }
func FuzzDecodeMppdb(f *testing.F)  { fuzzDecode(f, 'm') }

func fuzzDecode(f *testing.F, style byte) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, Format{Style: style}, data)
		if style != 'm' {
			checkDecode(t, Format{Style: style, Batch: true}, data)
		}
	})
}

func checkDecode(t *testing.T, f Format, data []byte) {
	payload := bytes.Clone(data)
	recs, err := Decode(f, payload, 0x10)
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("%s: error %T %v is not a *DecodeError", f, err, err)
		}
		if de.Offset < 0 || de.Offset > len(data) || de.Format != f {
			t.Fatalf("%s: %v: offset outside the %d-byte payload", f, err, len(data))
		}
		return
	}
	before := marshalAll(t, recs)
	for i := range payload {
		payload[i] ^= 0xFF
	}
	if after := marshalAll(t, recs); !bytes.Equal(before, after) {
		t.Fatalf("%s: records alias the payload", f)
	}
}

func marshalAll(t *testing.T, recs []Record) []byte {
	var out []byte
	for _, r := range recs {
		b, err := r.MarshalJSON()
		if err != nil || !json.Valid(b) {
			t.Fatalf("MarshalJSON: %s, %v", b, err)
		}
		out = append(append(out, b...), '\n')
	}
	return out
}
