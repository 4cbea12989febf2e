package source

// Patterns returns the filter's schema and table patterns, in list order,
// for rendering the filter in another language (a SQL predicate for
// PostgreSQL DDL capture). '*' matches any run of characters, every other
// character itself. The empty filter returns none; it selects every table
// outside SystemSchema, which no pattern ever overrides.
func (f TableFilter) Patterns() [][2]string {
	if len(f.patterns) == 0 {
		return nil
	}
	out := make([][2]string, len(f.patterns))
	for i, p := range f.patterns {
		out[i] = [2]string{p.schema, p.name}
	}
	return out
}
