package mysql

import (
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// Describe turns a driver error into one line without row values, as the
// writer reports its own, and marks whether it is worth a retry;
// errors.As still finds the *mysql.MySQLError. For other packages that
// write to a MySQL target (apply/bulk).
func Describe(err error) error { return describe(err) }

// Close ends the session.
func (s Session) Close() { s.close() }

// Converters compiles how rows of rel are written into the target table
// tt, as the writer does: the mapping plan and, by source column, the
// value converter (nil for columns not written).
func Converters(rel *source.Relation, tt *Table, rules mapping.ColumnRules, policy mapping.Policy, maria bool) (*mapping.Plan, []mapping.Converter, error) {
	p, err := newPlan(rel, tt, rules, policy, maria)
	if err != nil {
		return nil, nil, err
	}
	return p.Plan, p.conv, nil
}
