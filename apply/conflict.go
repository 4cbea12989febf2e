package apply

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// A conflict is a row change the target cannot apply as the source made
// it, named as PostgreSQL 18's logical replication names them. A policy
// says what the writer does with each kind (--on-conflict KIND=POLICY);
// every conflict a policy other than error resolves is written to the
// conflict log table (decant.conflicts, decant_conflicts) in the same
// target transaction as the rows, so a replay after a crash logs it once.
type ConflictKind uint8

const (
	InsertExists  ConflictKind = iota // an insert's key is already there
	UpdateMissing                     // no row matches an update's key
	DeleteMissing                     // no row matches a delete's key
	UpdateDiffers                     // REPLICA IDENTITY FULL: the key is there, other old values differ
	DeleteDiffers                     // likewise for a delete
	conflictKinds
)

var conflictKindNames = [conflictKinds]string{"insert_exists", "update_missing", "delete_missing", "update_differs", "delete_differs"}

func (k ConflictKind) String() string {
	if k < conflictKinds {
		return conflictKindNames[k]
	}
	return fmt.Sprintf("ConflictKind(%d)", k)
}

// ConflictPolicy is what a writer does with a conflict.
type ConflictPolicy uint8

const (
	PolicyError ConflictPolicy = iota // stop the pipeline (the default)
	PolicySkip                        // leave the target row as it is
	PolicyApply                       // make the target row the source's new row
	conflictPolicies
)

var conflictPolicyNames = [conflictPolicies]string{"error", "skip", "apply"}

func (p ConflictPolicy) String() string {
	if p < conflictPolicies {
		return conflictPolicyNames[p]
	}
	return fmt.Sprintf("ConflictPolicy(%d)", p)
}

// ConflictRule is one KIND=POLICY setting.
type ConflictRule struct {
	Kind   ConflictKind
	Policy ConflictPolicy
}

// ParseConflictRule reads "KIND=POLICY" (update_missing=apply). apply
// means nothing for a delete, nor for a row whose old values differ,
// where it would overwrite a row the target changed: those take error
// or skip.
func ParseConflictRule(spec string) (ConflictRule, error) {
	k, p, ok := strings.Cut(spec, "=")
	if !ok {
		return ConflictRule{}, fmt.Errorf("conflict policy %q is not KIND=POLICY (insert_exists=skip)", spec)
	}
	var r ConflictRule
	if r.Kind, ok = parseName[ConflictKind](strings.TrimSpace(k), conflictKindNames[:]); !ok {
		return r, fmt.Errorf("unknown conflict kind %q: use %s", k, strings.Join(conflictKindNames[:], ", "))
	}
	pol, ok := parseName[ConflictPolicy](strings.TrimSpace(p), conflictPolicyNames[:])
	if !ok {
		return r, fmt.Errorf("unknown conflict policy %q for %s: use error, skip or apply", p, r.Kind)
	}
	r.Policy = pol
	if r.Policy == PolicyApply && len(r.Kind.Resolving()) < 2 {
		return r, fmt.Errorf("conflict policy apply is for insert_exists and update_missing only; %s takes error or skip", r.Kind)
	}
	return r, nil
}

func parseName[T ~uint8](s string, names []string) (T, bool) {
	for i, n := range names {
		if n == s {
			return T(i), true
		}
	}
	return 0, false
}

// KindPolicies is a policy by ConflictKind.
type KindPolicies [conflictKinds]ConflictPolicy

// ConflictPolicies is the policy of every kind, for all tables and, where
// set, per target table. The zero value errors on every conflict.
type ConflictPolicies struct {
	All      KindPolicies
	PerTable map[source.TableName]KindPolicies
}

// Set applies rules to every table (table zero) or to one target table,
// over the policies for all tables.
func (c *ConflictPolicies) Set(table source.TableName, rules []ConflictRule) {
	if table == (source.TableName{}) {
		for _, r := range rules {
			c.All[r.Kind] = r.Policy
		}
		return
	}
	if c.PerTable == nil {
		c.PerTable = map[source.TableName]KindPolicies{}
	}
	row, ok := c.PerTable[table]
	if !ok {
		row = c.All
	}
	for _, r := range rules {
		row[r.Kind] = r.Policy
	}
	c.PerTable[table] = row
}

// Of returns target table's policies, by ConflictKind. Set the policies
// for all tables before those of one: a table's row starts from them.
func (c *ConflictPolicies) Of(table source.TableName) KindPolicies {
	if row, ok := c.PerTable[table]; ok {
		return row
	}
	return c.All
}

// Resolves reports whether any of table's kinds has a policy other than
// error: its changes then go one by one, each statement resolving and
// logging its own conflict (never gathered into a window of net changes,
// whose set-based statements could not say which row conflicted).
func (c *ConflictPolicies) Resolves(table source.TableName) bool {
	return c.Of(table) != KindPolicies{}
}

// ConflictTally counts the conflicts a target commit resolved, by kind
// and policy.
type ConflictTally [conflictKinds][conflictPolicies]int64

// Each calls f for every count that is not zero.
func (t *ConflictTally) Each(f func(ConflictKind, ConflictPolicy, int64)) {
	for k := range t {
		for p, n := range t[k] {
			if n != 0 {
				f(ConflictKind(k), ConflictPolicy(p), n)
			}
		}
	}
}

// MoveTo adds t's counts to dst and clears t: a target's open
// transaction's conflicts, once committed, join those it reports.
func (t *ConflictTally) MoveTo(dst *ConflictTally) {
	for k := range t {
		for p, n := range t[k] {
			dst[k][p] += n
		}
	}
	*t = ConflictTally{}
}

// Take returns t's counts and clears it.
func (t *ConflictTally) Take() ConflictTally {
	c := *t
	*t = ConflictTally{}
	return c
}

// ConflictCounter is a Target that resolves conflicts by policy:
// TakeConflicts returns what its commits resolved since the last call
// and forgets it. The pipeline calls it after every target commit.
type ConflictCounter interface {
	TakeConflicts() ConflictTally
}

// ConflictKinds lists every kind.
func ConflictKinds() []ConflictKind {
	return []ConflictKind{InsertExists, UpdateMissing, DeleteMissing, UpdateDiffers, DeleteDiffers}
}

// Resolving lists the policies other than error that kind k takes.
func (k ConflictKind) Resolving() []ConflictPolicy {
	if k == InsertExists || k == UpdateMissing {
		return []ConflictPolicy{PolicySkip, PolicyApply}
	}
	return []ConflictPolicy{PolicySkip}
}

// Any reports whether some kind of some table has a policy other than
// error.
func (c *ConflictPolicies) Any() bool {
	if c.All != (KindPolicies{}) {
		return true
	}
	for _, row := range c.PerTable {
		if row != (KindPolicies{}) {
			return true
		}
	}
	return false
}

// ConflictKey is the key of c's row as a JSON object of target column names
// and their text values (null for NULL): the old image's where the
// source sent one, else the new. A table without a key logs every
// written column.
func ConflictKey(p *mapping.Plan, c *source.Change) ([]byte, error) {
	row := c.Old
	if row == nil {
		row = c.New
	}
	cols := p.Key
	if len(cols) == 0 {
		cols = p.Cols
	}
	var b []byte
	b = append(b, '{')
	for n, i := range cols {
		if n > 0 {
			b = append(b, ',')
		}
		name, _ := json.Marshal(p.Targets[i].Name)
		b = append(b, name...)
		b = append(b, ':')
		v := row[i]
		switch v.Kind {
		case source.ValueNull:
			b = append(b, "null"...)
		case source.ValueUnchanged:
			b = append(b, `"(unchanged)"`...)
		default:
			s, err := json.Marshal(string(v.Data))
			if err != nil {
				return nil, err
			}
			b = append(b, s...)
		}
	}
	return append(b, '}'), nil
}

// ConflictError is the stop on a conflict of kind whose policy is error.
func ConflictError(kind ConflictKind) error {
	switch kind {
	case UpdateDiffers, DeleteDiffers:
		return fmt.Errorf("no target row matches the source row's old values, but a row with its key is there with other values (%s): the target has diverged from the source; --on-conflict %s=skip leaves such rows as they are", kind, kind)
	case UpdateMissing:
		return fmt.Errorf("no target row matches the source row (%s): the target has diverged from the source; --on-conflict %s=skip or =apply (with the whole new row) resolves it", kind, kind)
	}
	return fmt.Errorf("no target row matches the source row (%s): the target has diverged from the source; --on-conflict %s=skip resolves it", kind, kind)
}
