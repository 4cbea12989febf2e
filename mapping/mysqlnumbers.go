package mapping

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// decimalValue is a number in decimal notation: its sign and its digits,
// intg without leading zeros and frac without trailing zeros (zero has
// neither). special is 0 for a finite number, else 'N' (NaN), '+'
// (Infinity) or '-' (-Infinity).
type decimalValue struct {
	neg        bool
	intg, frac []byte
	special    byte
}

// maxExponent bounds the exponent parseDecimal expands; float8 text never
// goes past e±324.
const maxExponent = 1000

// parseDecimal reads numeric or float text: [-]digits[.digits][e±digits],
// NaN, Infinity or -Infinity.
func parseDecimal(s []byte) (decimalValue, bool) {
	var d decimalValue
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		d.neg, s = s[0] == '-', s[1:]
	}
	switch {
	case bytes.EqualFold(s, []byte("NaN")):
		return decimalValue{special: 'N'}, true
	case bytes.EqualFold(s, []byte("Infinity")) || bytes.EqualFold(s, []byte("inf")):
		d.special = '+'
		if d.neg {
			d.special = '-'
		}
		return d, true
	}
	mant, exp, ok := splitExponent(s)
	if !ok {
		return d, false
	}
	intg, frac, _ := bytes.Cut(mant, []byte("."))
	if len(intg)+len(frac) == 0 || !allDigits(intg) || !allDigits(frac) {
		return d, false
	}
	d.intg, d.frac = shiftPoint(intg, frac, exp)
	return d.trim(), true
}

// splitExponent separates "1.5e-3" into "1.5" and -3.
func splitExponent(s []byte) ([]byte, int, bool) {
	i := bytes.IndexAny(s, "eE")
	if i < 0 {
		return s, 0, true
	}
	exp, err := strconv.Atoi(string(s[i+1:]))
	if err != nil || exp > maxExponent || exp < -maxExponent {
		return nil, 0, false
	}
	return s[:i], exp, true
}

// shiftPoint moves the decimal point of intg.frac by exp places.
func shiftPoint(intg, frac []byte, exp int) ([]byte, []byte) {
	if exp == 0 {
		return intg, frac
	}
	digits := append(append([]byte{}, intg...), frac...)
	point := len(intg) + exp
	switch {
	case point <= 0:
		return nil, append(bytes.Repeat([]byte("0"), -point), digits...)
	case point >= len(digits):
		return append(digits, bytes.Repeat([]byte("0"), point-len(digits))...), nil
	}
	return digits[:point], digits[point:]
}

func allDigits(s []byte) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// trim drops leading zeros of the integer part and trailing zeros of the
// fraction, and the sign of zero.
func (d decimalValue) trim() decimalValue {
	d.intg = bytes.TrimLeft(d.intg, "0")
	d.frac = bytes.TrimRight(d.frac, "0")
	if len(d.intg) == 0 && len(d.frac) == 0 {
		d.neg = false
	}
	return d
}

func (d decimalValue) String() string {
	var b strings.Builder
	if d.neg {
		b.WriteByte('-')
	}
	if len(d.intg) == 0 {
		b.WriteByte('0')
	}
	b.Write(d.intg)
	if len(d.frac) > 0 {
		b.WriteByte('.')
		b.Write(d.frac)
	}
	return b.String()
}

// round rounds half away from zero to scale fractional digits.
func (d decimalValue) round(scale int) decimalValue {
	if len(d.frac) <= scale {
		return d
	}
	up := d.frac[scale] >= '5'
	digits := append(append([]byte{}, d.intg...), d.frac[:scale]...)
	for i := len(digits) - 1; up && i >= 0; i-- {
		digits[i]++
		if up = digits[i] > '9'; up {
			digits[i] = '0'
		}
	}
	if up {
		digits = append([]byte("1"), digits...)
	}
	n := len(digits) - scale
	return decimalValue{neg: d.neg, intg: digits[:n], frac: digits[n:]}.trim()
}

// parseMoney reads money text in the C locale, "$1,234.56" or
// "-$92,233,720,368,547,758.08", into decimal text "1234.56". Thousands
// separators must group three digits before the point, so a locale that
// swaps '.' and ',' fails rather than scaling the amount.
func parseMoney(s []byte) ([]byte, bool) {
	neg := false
	if len(s) > 1 && s[0] == '(' && s[len(s)-1] == ')' {
		neg, s = true, s[1:len(s)-1]
	}
	if len(s) > 0 && s[0] == '-' {
		neg, s = !neg, s[1:]
	}
	s = bytes.TrimPrefix(s, []byte("$"))
	intg, frac, _ := bytes.Cut(s, []byte("."))
	groups := bytes.Split(intg, []byte(","))
	out := make([]byte, 0, len(s)+1)
	if neg {
		out = append(out, '-')
	}
	for i, g := range groups {
		if len(g) == 0 || !allDigits(g) || (i > 0 && len(g) != 3) {
			return nil, false
		}
		out = append(out, g...)
	}
	if len(frac) > 0 {
		if !allDigits(frac) {
			return nil, false
		}
		out = append(append(out, '.'), frac...)
	}
	return out, true
}

// decimalOf reads a number source's text as a decimal.
func (v valueSource) decimalOf(text []byte) (decimalValue, error) {
	if v.class == clMoney {
		m, ok := parseMoney(text)
		if !ok {
			return decimalValue{}, v.malformed(nil)
		}
		text = m
	}
	d, ok := parseDecimal(text)
	if !ok {
		return d, v.malformed(nil)
	}
	return d, nil
}

// toDecimal writes numbers into DECIMAL(p,s): never rounded silently.
func (v valueSource) toDecimal(tg *targetCol, f fit) Converter {
	return func(text []byte) (any, error) {
		d, err := v.decimalOf(text)
		if err != nil {
			return nil, err
		}
		return v.fitDecimal(d, tg, f)
	}
}

func (v valueSource) fitDecimal(d decimalValue, tg *targetCol, f fit) (any, error) {
	p, s := tg.precision, tg.scale
	switch d.special {
	case 'N':
		return f.reject(v.name + " NaN has no DECIMAL value")
	case '+':
		return f.clamp(v.name+" Infinity has no DECIMAL value", maxDecimal(p, s, false))
	case '-':
		return f.clamp(v.name+" -Infinity has no DECIMAL value", maxDecimal(p, s, true))
	}
	if len(d.frac) > s {
		if f.policy != PolicyClamp {
			return f.reject(fmt.Sprintf("%s does not fit %s: more than %d fractional digits", v.name, tg.name, s))
		}
		d = d.round(s)
	}
	if len(d.intg) > p-s {
		rule := fmt.Sprintf("%s does not fit %s: more than %d integer digits", v.name, tg.name, p-s)
		return f.clamp(rule, maxDecimal(p, s, d.neg))
	}
	return d.String(), nil
}

// maxDecimal is the largest (or, neg, the smallest) DECIMAL(p,s) value.
func maxDecimal(p, s int, neg bool) string {
	d := decimalValue{neg: neg, intg: bytes.Repeat([]byte("9"), p-s), frac: bytes.Repeat([]byte("9"), s)}
	return d.String()
}

// toInt writes integers, booleans and integral numbers into integer
// columns and YEAR, checking the column's range.
func (v valueSource) toInt(tg *targetCol, f fit) Converter {
	switch {
	case v.class == clBool && tg.dataType != "year":
		return func(text []byte) (any, error) {
			b, err := v.boolOf(text)
			switch {
			case err != nil:
				return nil, err
			case b:
				return int64(1), nil
			}
			return int64(0), nil
		}
	case v.class == clInt:
		return func(text []byte) (any, error) {
			neg, mag, over, ok := parseInteger(text)
			if !ok {
				return nil, v.malformed(nil)
			}
			return v.fitInt(neg, mag, over, tg, f)
		}
	case v.number():
		return func(text []byte) (any, error) {
			d, err := v.decimalOf(text)
			if err != nil {
				return nil, err
			}
			return v.integral(d, tg, f)
		}
	}
	return nil
}

func (v valueSource) boolOf(text []byte) (bool, error) {
	switch string(text) {
	case "t":
		return true, nil
	case "f":
		return false, nil
	}
	return false, v.malformed(nil)
}

// integral writes a decimal into an integer column: a fraction is
// unrepresentable (rounded half away from zero under PolicyClamp).
func (v valueSource) integral(d decimalValue, tg *targetCol, f fit) (any, error) {
	switch d.special {
	case 'N':
		return f.reject(v.name + " NaN has no " + tg.name + " value")
	case '+':
		return f.clamp(v.name+" Infinity has no "+tg.name+" value", tg.hiValue())
	case '-':
		return f.clamp(v.name+" -Infinity has no "+tg.name+" value", tg.lo)
	}
	if len(d.frac) > 0 {
		if f.policy != PolicyClamp {
			return f.reject(v.name + " has a fraction; " + tg.name + " holds integers")
		}
		d = d.round(0)
	}
	mag, err := strconv.ParseUint("0"+string(d.intg), 10, 64)
	return v.fitInt(d.neg, mag, errors.Is(err, strconv.ErrRange), tg, f)
}

// parseInteger reads integer text as a sign and magnitude; over reports a
// magnitude past uint64.
func parseInteger(s []byte) (neg bool, mag uint64, over, ok bool) {
	if len(s) > 0 && s[0] == '-' {
		neg, s = true, s[1:]
	}
	if len(s) == 0 || !allDigits(s) {
		return false, 0, false, false
	}
	mag, err := strconv.ParseUint(string(s), 10, 64)
	return neg, mag, err != nil, true
}

// fitInt checks a sign and magnitude against the column's range.
func (v valueSource) fitInt(neg bool, mag uint64, over bool, tg *targetCol, f fit) (any, error) {
	below := neg && mag != 0 && (over || tg.lo >= 0 || mag-1 > uint64(-(tg.lo+1)))
	below = below || (!neg && tg.lo > 0 && mag < uint64(tg.lo))
	above := !neg && (over || mag > tg.hi)
	if below || above {
		rule := fmt.Sprintf("%s is outside %s's range %d..%d", v.name, tg.name, tg.lo, tg.hi)
		if below {
			return f.clamp(rule, tg.lo)
		}
		return f.clamp(rule, tg.hiValue())
	}
	if neg {
		return -int64(mag), nil
	}
	if mag > math.MaxInt64 {
		return strconv.FormatUint(mag, 10), nil
	}
	return int64(mag), nil
}

// hiValue is the column's largest value as a driver argument.
func (tg *targetCol) hiValue() any {
	if tg.hi > math.MaxInt64 {
		return strconv.FormatUint(tg.hi, 10)
	}
	return int64(tg.hi)
}

// toFloat writes numbers into FLOAT (rounded to float32, as the column
// keeps them) and DOUBLE. MySQL has no NaN or infinities.
func (v valueSource) toFloat(tg *targetCol, f fit) Converter {
	bits, limit := 64, math.MaxFloat64
	if tg.kind == tgFloat {
		bits, limit = 32, math.MaxFloat32
	}
	return func(text []byte) (any, error) {
		if v.class == clMoney {
			m, ok := parseMoney(text)
			if !ok {
				return nil, v.malformed(nil)
			}
			text = m
		}
		x, err := strconv.ParseFloat(string(text), bits)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, v.malformed(nil)
		}
		switch {
		case math.IsNaN(x):
			return f.reject(v.name + " NaN has no " + tg.name + " value")
		case math.IsInf(x, 0) && err == nil:
			return f.clamp(v.name+" infinity has no "+tg.name+" value", math.Copysign(limit, x))
		case math.IsInf(x, 0):
			return f.clamp(v.name+" is outside "+tg.name+"'s range", math.Copysign(limit, x))
		}
		return x, nil
	}
}
