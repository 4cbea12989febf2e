package mapping

import (
	"bytes"
	"errors"
	"time"
)

const (
	usecPerSec = 1_000_000
	usecPerDay = 86400 * usecPerSec
)

// pgTime is a date and time of day as PostgreSQL prints them with
// DateStyle=ISO, or ±infinity.
type pgTime struct {
	inf        int   // +1 for infinity, -1 for -infinity
	year       int   // astronomical: 1 BC is year 0
	month, day int   //
	usec       int64 // microseconds into the day; 24:00:00 only for time
	offset     int   // zone offset, seconds east of UTC
}

func (a pgTime) before(b pgTime) bool {
	if a.year != b.year {
		return a.year < b.year
	}
	if a.month != b.month {
		return a.month < b.month
	}
	if a.day != b.day {
		return a.day < b.day
	}
	return a.usec < b.usec
}

// utc moves a time with a zone offset to UTC.
func (a pgTime) utc() pgTime {
	if a.offset == 0 || a.inf != 0 {
		return a
	}
	t := time.Date(a.year, time.Month(a.month), a.day, 0, 0, 0, 0, time.UTC)
	t = t.Add(time.Duration(a.usec)*time.Microsecond - time.Duration(a.offset)*time.Second)
	y, m, d := t.Date()
	return pgTime{year: y, month: int(m), day: d, usec: int64(t.Hour()*3600+t.Minute()*60+t.Second())*usecPerSec + int64(t.Nanosecond()/1000)}
}

var errTimeText = errors.New("not in ISO form")

// parseDate reads "2024-02-29", "4713-01-01 BC", "infinity" or "-infinity".
func parseDate(s []byte) (pgTime, error) {
	if v, ok := parseInfinity(s); ok {
		return v, nil
	}
	s, bc := cutBC(s)
	v, rest, ok := parseYMD(s)
	if !ok || len(rest) != 0 {
		return v, errTimeText
	}
	return v.era(bc), nil
}

// parseTimestamp reads "2024-02-29 12:00:00.000001", with a zone offset
// ("+05:30", "-03", "+00") when zoned, and " BC" after it all.
func parseTimestamp(s []byte, zoned bool) (pgTime, error) {
	if v, ok := parseInfinity(s); ok {
		return v, nil
	}
	s, bc := cutBC(s)
	v, rest, ok := parseYMD(s)
	if !ok || len(rest) == 0 || rest[0] != ' ' {
		return v, errTimeText
	}
	if v.usec, rest, ok = parseClock(rest[1:]); !ok || v.usec >= usecPerDay {
		return v, errTimeText
	}
	if v.offset, rest, ok = parseOffset(rest, zoned); !ok || len(rest) != 0 {
		return v, errTimeText
	}
	return v.era(bc).utc(), nil
}

// parseTimeOfDay reads "13:45:00.5", "24:00:00", and for timetz an offset
// ("12:00:00+05:30"), which it applies as PostgreSQL's AT TIME ZONE 'UTC'
// does: the result wraps around midnight into 00:00:00..23:59:59.999999.
func parseTimeOfDay(s []byte, zoned bool) (int64, error) {
	usec, rest, ok := parseClock(s)
	if !ok {
		return 0, errTimeText
	}
	offset, rest, ok := parseOffset(rest, zoned)
	if !ok || len(rest) != 0 {
		return 0, errTimeText
	}
	if !zoned {
		return usec, nil
	}
	usec -= int64(offset) * usecPerSec
	return ((usec % usecPerDay) + usecPerDay) % usecPerDay, nil
}

func parseInfinity(s []byte) (pgTime, bool) {
	switch string(s) {
	case "infinity":
		return pgTime{inf: 1}, true
	case "-infinity":
		return pgTime{inf: -1}, true
	}
	return pgTime{}, false
}

func cutBC(s []byte) ([]byte, bool) {
	return bytes.CutSuffix(s, []byte(" BC"))
}

// era turns a BC year into an astronomical one: 1 BC is year 0.
func (a pgTime) era(bc bool) pgTime {
	if bc {
		a.year = 1 - a.year
	}
	return a
}

// parseYMD reads YYYY-MM-DD; the year has 4 or more digits.
func parseYMD(s []byte) (pgTime, []byte, bool) {
	n := 0
	for n < len(s) && n < 8 && isDigit(s[n]) {
		n++
	}
	if n < 4 || len(s) < n+6 || s[n] != '-' || s[n+3] != '-' {
		return pgTime{}, nil, false
	}
	y, ok1 := atoi(s[:n])
	m, ok2 := atoi(s[n+1 : n+3])
	d, ok3 := atoi(s[n+4 : n+6])
	ok := ok1 && ok2 && ok3 && y >= 1 && m >= 1 && m <= 12 && d >= 1 && d <= 31
	return pgTime{year: y, month: m, day: d}, s[n+6:], ok
}

// parseClock reads HH:MM:SS with up to six fractional digits.
func parseClock(s []byte) (int64, []byte, bool) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, nil, false
	}
	h, ok1 := atoi(s[0:2])
	m, ok2 := atoi(s[3:5])
	sec, ok3 := atoi(s[6:8])
	if !ok1 || !ok2 || !ok3 || h > 24 || m > 59 || sec > 59 {
		return 0, nil, false
	}
	usec := int64(h*3600+m*60+sec) * usecPerSec
	s = s[8:]
	if len(s) > 0 && s[0] == '.' {
		n := 1
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		if n == 1 || n > 7 {
			return 0, nil, false
		}
		frac, _ := atoi(s[1:n])
		for i := n; i < 7; i++ {
			frac *= 10
		}
		usec, s = usec+int64(frac), s[n:]
	}
	return usec, s, usec <= usecPerDay
}

// parseOffset reads a zone offset ±HH[:MM[:SS]] when zoned, else nothing.
func parseOffset(s []byte, zoned bool) (int, []byte, bool) {
	if !zoned {
		return 0, s, true
	}
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return 0, nil, false
	}
	sign, secs := 1, 0
	if s[0] == '-' {
		sign = -1
	}
	s = s[1:]
	for unit := 3600; unit >= 1; unit /= 60 {
		n, ok := atoi(s[:min(2, len(s))])
		if !ok || len(s) < 2 {
			return 0, nil, false
		}
		secs, s = secs+n*unit, s[2:]
		if len(s) == 0 || s[0] != ':' || unit == 1 {
			break
		}
		s = s[1:]
	}
	return sign * secs, s, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// atoi reads a short run of digits.
func atoi(s []byte) (int, bool) {
	if len(s) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// bounds gives a date target's range, from its first to its last
// microsecond, and how rules spell it. DATE and DATETIME hold
// 1000-01-01..9999-12-31; TIMESTAMP is seconds since the epoch in 32 bits.
func (tg *targetCol) bounds() (lo, hi pgTime, spelled string) {
	if tg.kind == tgTimestamp {
		return pgTime{year: 1970, month: 1, day: 1, usec: usecPerSec},
			pgTime{year: 2038, month: 1, day: 19, usec: (3*3600+14*60+7)*usecPerSec + 999999},
			"1970-01-01 00:00:01..2038-01-19 03:14:07 UTC"
	}
	return pgTime{year: 1000, month: 1, day: 1},
		pgTime{year: 9999, month: 12, day: 31, usec: usecPerDay - 1},
		"1000-01-01..9999-12-31"
}

// unit is the smallest step the column keeps, in microseconds.
func (tg *targetCol) unit() int64 {
	if tg.kind == tgDate {
		return usecPerDay
	}
	u := int64(1)
	for i := tg.scale; i < 6; i++ {
		u *= 10
	}
	return u
}

// toDateTime writes date, timestamp and timestamptz (in UTC) into DATE,
// DATETIME and TIMESTAMP.
func (v valueSource) toDateTime(tg *targetCol, f fit) Converter {
	return func(text []byte) (any, error) {
		var t pgTime
		var err error
		if v.class == clDate {
			t, err = parseDate(text)
		} else {
			t, err = parseTimestamp(text, v.class == clTimestamptz)
		}
		if err != nil {
			return nil, v.malformed(err)
		}
		return v.fitDateTime(t, tg, f)
	}
}

func (v valueSource) fitDateTime(t pgTime, tg *targetCol, f fit) (any, error) {
	lo, hi, spelled := tg.bounds()
	top := hi // the last value the column holds
	top.usec -= top.usec % tg.unit()
	// Only a value out of range pays for the message.
	outside := func(what string) string {
		return v.name + what + " is outside " + tg.dataTypeName() + "'s range " + spelled
	}
	switch {
	case t.inf > 0:
		return f.clamp(outside(" infinity"), tg.formatTime(top))
	case t.inf < 0:
		return f.clamp(outside(" -infinity"), tg.formatTime(lo))
	case t.before(lo):
		return f.clamp(outside(""), tg.formatTime(lo))
	case hi.before(t):
		return f.clamp(outside(""), tg.formatTime(top))
	}
	return v.truncate(t, tg, f)
}

// truncate drops time the column does not keep (fractional digits past
// its precision, a time of day in a DATE): unrepresentable, or cut off
// under PolicyClamp, never rounded up into the next second or day.
func (v valueSource) truncate(t pgTime, tg *targetCol, f fit) (any, error) {
	extra := t.usec % tg.unit()
	if extra == 0 {
		return tg.formatTime(t), nil
	}
	if f.policy != PolicyClamp {
		if tg.kind == tgDate {
			return f.reject(v.name + " has a time of day that DATE does not keep")
		}
		return f.reject(v.name + " has more fractional second digits than " + tg.name + " keeps")
	}
	t.usec -= extra
	return tg.formatTime(t), nil
}

func (tg *targetCol) dataTypeName() string {
	switch tg.kind {
	case tgDate:
		return "DATE"
	case tgTimestamp:
		return "TIMESTAMP"
	}
	return "DATETIME"
}

// toTime writes time and timetz (in UTC) into TIME.
func (v valueSource) toTime(tg *targetCol, f fit) Converter {
	return func(text []byte) (any, error) {
		usec, err := parseTimeOfDay(text, v.class == clTimetz)
		if err != nil {
			return nil, v.malformed(err)
		}
		return v.truncate(pgTime{usec: usec}, tg, f)
	}
}

// formatTime renders a value in the column's literal form: YYYY-MM-DD,
// YYYY-MM-DD HH:MM:SS[.ffffff] or HH:MM:SS[.ffffff], with the fraction's
// trailing zeros left out.
func (tg *targetCol) formatTime(t pgTime) string {
	b := make([]byte, 0, 26)
	if tg.kind != tgTime {
		b = appendPadded(b, t.year, 4)
		b = append(b, '-')
		b = appendPadded(b, t.month, 2)
		b = append(b, '-')
		b = appendPadded(b, t.day, 2)
		if tg.kind == tgDate {
			return string(b)
		}
		b = append(b, ' ')
	}
	secs := t.usec / usecPerSec
	b = appendPadded(b, int(secs/3600), 2)
	b = append(b, ':')
	b = appendPadded(b, int(secs/60%60), 2)
	b = append(b, ':')
	b = appendPadded(b, int(secs%60), 2)
	if frac := int(t.usec % usecPerSec); frac != 0 {
		b = append(b, '.')
		b = bytes.TrimRight(appendPadded(b, frac, 6), "0")
	}
	return string(b)
}

func appendPadded(b []byte, n, width int) []byte {
	var digits [20]byte
	i := len(digits)
	for n > 0 || i == len(digits) {
		i--
		digits[i] = byte('0' + n%10)
		n /= 10
	}
	for w := len(digits) - i; w < width; w++ {
		b = append(b, '0')
	}
	return append(b, digits[i:]...)
}
