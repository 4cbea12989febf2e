package pg

// Describe turns a target error into one line without row values, as the
// writer reports its own (data exceptions lose the quoted value, DETAIL is
// dropped); errors.As still finds the *pgconn.PgError. For other packages
// that write to a PostgreSQL target (apply/bulk).
func Describe(err error) error { return describe(err) }
