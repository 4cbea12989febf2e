package source

import (
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
)

// LSN is a position in the source's write-ahead log, printed as PostgreSQL
// does: two hexadecimal halves separated by a slash ("16/B374D848").
type LSN uint64

// String formats the LSN as XXX/XXX.
func (l LSN) String() string {
	return fmt.Sprintf("%X/%X", uint32(l>>32), uint32(l))
}

// ParseLSN parses the XXX/XXX text form.
func ParseLSN(s string) (LSN, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("invalid LSN %q: want two hex numbers separated by '/'", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("invalid LSN %q: %w", s, err)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("invalid LSN %q: %w", s, err)
	}
	return LSN(h<<32 | l), nil
}

// Scan implements sql.Scanner for pg_lsn columns read as text.
func (l *LSN) Scan(src any) error {
	switch v := src.(type) {
	case string:
		p, err := ParseLSN(v)
		*l = p
		return err
	case []byte:
		p, err := ParseLSN(string(v))
		*l = p
		return err
	case nil:
		*l = 0
		return nil
	}
	return fmt.Errorf("cannot scan %T into LSN", src)
}

// Value implements driver.Valuer: the text form, which pg_lsn accepts.
func (l LSN) Value() (driver.Value, error) {
	return l.String(), nil
}
