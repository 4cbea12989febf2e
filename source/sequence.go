package source

// Sequence is a source column fed by a sequence (a serial or identity
// column) and the value that sequence gives next. A cutover carries it to
// the target, so that rows inserted there do not collide with copied ones.
type Sequence struct {
	Table  TableName
	Column string
	Next   int64
}
