package mapping

import (
	"fmt"

	"github.com/decant/decant/source"
)

// Converter turns one source text value into the argument the driver sends
// for the target column: string, []byte, int64, float64 or nil (NULL). NULL
// source values never reach a Converter.
type Converter func(text []byte) (any, error)

// MySQLConverter builds the converter that writes a source column into a
// target column, applying policy to values the column cannot hold. It
// fails when the pair makes no sense at all (bytea into INT).
//
// Which sources each target accepts:
//   - text types (CHAR, VARCHAR, TEXT...): anything, as its PostgreSQL text
//   - BINARY, VARBINARY, BLOBs: bytea decoded; anything else as its text
//   - JSON: json, jsonb; arrays, composites, ranges; text holding a JSON document; scalars as JSON scalars
//   - integer types and YEAR: integers, numeric, floats, money, boolean
//   - DECIMAL, FLOAT, DOUBLE: integers, numeric, floats, money
//   - DATE, DATETIME, TIMESTAMP: date, timestamp, timestamptz
//   - TIME: time, timetz
//   - ENUM, SET: enums and strings
//   - BIT: bit, varbit, boolean
func MySQLConverter(src source.Column, tgt MySQLColumn, policy Policy) (Converter, error) {
	if tgt.Generated {
		return nil, fmt.Errorf("target column %s is generated and never written", tgt.Name)
	}
	if policy > PolicyClamp {
		return nil, fmt.Errorf("unknown policy %s", policy)
	}
	t, err := TypeOf(src.Type, src.Info)
	if err != nil {
		return nil, err
	}
	base, typmod, err := underlying(t, src.TypeMod)
	if err != nil {
		return nil, err
	}
	tg, err := parseTarget(tgt)
	if err != nil {
		return nil, err
	}
	v := valueSource{typ: base, typmod: typmod, class: classOf(base), name: typeName(t)}
	c := v.converter(&tg, fit{policy: policy, notNull: !tgt.Nullable})
	if c == nil {
		return nil, fmt.Errorf("cannot write PostgreSQL %s into MySQL %s", typeName(t), tgt.ColumnType)
	}
	return c, nil
}

// fit applies the policy to a value the target column cannot hold.
type fit struct {
	policy  Policy
	notNull bool
}

// reject handles a value with no nearest value (NaN, an unknown label), or
// any value under PolicyError or PolicyNull: NULL where the policy and
// the column allow it, else the rule as an error.
func (f fit) reject(rule string) (any, error) {
	if f.policy == PolicyError || f.notNull {
		return nil, &Unrepresentable{Rule: rule}
	}
	return nil, nil
}

// clamp gives nearest under PolicyClamp, else rejects.
func (f fit) clamp(rule string, nearest any) (any, error) {
	if f.policy == PolicyClamp {
		return nearest, nil
	}
	return f.reject(rule)
}

// class is a family of source types that convert alike.
type class uint8

const (
	clText        class = iota // kept as its text: xml, inet, interval, extension types...
	clString                   // text, varchar, name, "char"
	clBpchar                   // blank-padded char(n)
	clEnum                     //
	clBool                     //
	clInt                      // int2, int4, int8, oid, xid, cid, xid8
	clNumeric                  //
	clFloat                    // float4, float8
	clMoney                    //
	clBytea                    //
	clUUID                     //
	clBit                      // bit, varbit
	clJSON                     // json, jsonb
	clDate                     //
	clTime                     //
	clTimetz                   //
	clTimestamp                //
	clTimestamptz              //
	clStructured               // arrays, composites, ranges, multiranges: JSON
)

func classOf(t *source.Type) class {
	switch t.Kind {
	case source.KindEnum:
		return clEnum
	case source.KindArray, source.KindComposite, source.KindRange, source.KindMultirange:
		return clStructured
	}
	switch t.OID {
	case oidText, oidVarchar, oidName, oidChar:
		return clString
	case oidBpchar:
		return clBpchar
	case oidBool:
		return clBool
	case oidInt2, oidInt4, oidInt8, oidOID, oidXID, oidCID, oidXID8:
		return clInt
	case oidNumeric:
		return clNumeric
	case oidFloat4, oidFloat8:
		return clFloat
	case oidMoney:
		return clMoney
	case oidBytea:
		return clBytea
	case oidUUID:
		return clUUID
	case oidBit, oidVarbit:
		return clBit
	case oidJSON, oidJSONB:
		return clJSON
	}
	return timeClass(t.OID)
}

func timeClass(oid uint32) class {
	switch oid {
	case oidDate:
		return clDate
	case oidTime:
		return clTime
	case oidTimetz:
		return clTimetz
	case oidTimestamp:
		return clTimestamp
	case oidTimestamptz:
		return clTimestamptz
	}
	return clText
}

// valueSource is the source side of a conversion: the column's type with
// domains resolved, and the name rules give it.
type valueSource struct {
	typ    *source.Type
	typmod int32
	class  class
	name   string
}

// number reports whether the source is a number MySQL numeric types take.
func (v valueSource) number() bool {
	return v.class == clInt || v.class == clNumeric || v.class == clFloat || v.class == clMoney
}

// stringy reports whether the source holds plain strings.
func (v valueSource) stringy() bool {
	return v.class == clString || v.class == clBpchar || v.class == clEnum
}

// converter picks the conversion for the target; nil when none makes sense.
func (v valueSource) converter(tg *targetCol, f fit) Converter {
	switch tg.kind {
	case tgChars, tgTextBytes:
		return v.toString(tg, f)
	case tgBinary:
		return v.toBinary(tg, f)
	case tgJSON:
		return v.toJSON(f)
	case tgInt:
		return v.toInt(tg, f)
	case tgDecimal:
		return v.when(v.number(), v.toDecimal(tg, f))
	case tgFloat, tgDouble:
		return v.when(v.number(), v.toFloat(tg, f))
	case tgDate, tgDatetime, tgTimestamp:
		return v.when(v.class == clDate || v.class == clTimestamp || v.class == clTimestamptz, v.toDateTime(tg, f))
	case tgTime:
		return v.when(v.class == clTime || v.class == clTimetz, v.toTime(tg, f))
	case tgEnum, tgSet:
		return v.when(v.stringy(), v.toLabel(tg, f))
	case tgBit:
		return v.toBit(tg, f)
	}
	return nil
}

func (v valueSource) when(ok bool, c Converter) Converter {
	if !ok {
		return nil
	}
	return c
}

// malformed is the error for source text that is not what the type prints.
func (v valueSource) malformed(err error) error {
	if err == nil {
		return fmt.Errorf("malformed %s text", v.name)
	}
	return fmt.Errorf("malformed %s text: %w", v.name, err)
}
