package pg

import (
	"testing"

	"github.com/decant/decant/source"
)

// TestRecordEnd: an insert position right after a page header (the last
// record filled the page before) counts from the page's start, which is
// where a flush of everything before it stops; any other position stays.
func TestRecordEnd(t *testing.T) {
	w := &walState{block: 8192, segment: 16 << 20}
	for _, c := range []struct{ insert, want source.LSN }{
		{0x1000028, 0x1000000}, // after a segment's long header
		{0x1002018, 0x1002000}, // after a page's short header
		{0x1002028, 0x1002028}, // a record ends 16 bytes into the page (the tail of one that crossed it)
		{0x1002030, 0x1002030},
		{0x1001ff8, 0x1001ff8},
	} {
		if got := w.recordEnd(c.insert); got != c.want {
			t.Errorf("recordEnd(%s) = %s, want %s", c.insert, got, c.want)
		}
	}
	// An unknown page layout leaves every position as it is.
	unknown := &walState{}
	if got := unknown.recordEnd(0x1002018); got != 0x1002018 {
		t.Errorf("unknown layout: recordEnd moved 0/1002018 to %s", got)
	}
}
