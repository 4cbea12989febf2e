package integration

import (
	"database/sql"

	"github.com/decant/decant/apply/mysql"
)

// myValue runs a query on the MariaDB target that returns one value.
func (p *pair) myValue(query string) string {
	p.t.Helper()
	s, err := mysql.Connect(p.t.Context(), p.tgt)
	if err != nil {
		p.t.Fatal(err)
	}
	defer s.Conn.Close()
	defer s.DB.Close()
	var v sql.NullString
	if err := s.Conn.QueryRowContext(p.t.Context(), query).Scan(&v); err != nil {
		p.t.Fatalf("%s: %v", query, err)
	}
	return v.String
}

// myExec runs statements (several, separated by semicolons) on the
// MariaDB target.
func (p *pair) myExec(statements string) {
	p.t.Helper()
	s, err := mysql.Connect(p.t.Context(), p.tgt)
	if err != nil {
		p.t.Fatal(err)
	}
	defer s.Conn.Close()
	defer s.DB.Close()
	if _, err := s.Conn.ExecContext(p.t.Context(), statements); err != nil {
		p.t.Fatalf("%s: %v", statements, err)
	}
}
