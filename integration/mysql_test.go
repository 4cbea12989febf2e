package integration

import (
	"database/sql"

	"github.com/decant/decant/apply/mysql"
)

// myConn connects to the MariaDB target; the caller runs close.
func (p *pair) myConn() (conn *sql.Conn, close func()) {
	p.t.Helper()
	s, err := mysql.Connect(p.t.Context(), p.tgt)
	if err != nil {
		p.t.Fatal(err)
	}
	return s.Conn, func() {
		s.Conn.Close()
		s.DB.Close()
	}
}

// myValue runs a query on the MariaDB target that returns one value.
func (p *pair) myValue(query string) string {
	p.t.Helper()
	conn, close := p.myConn()
	defer close()
	var v sql.NullString
	if err := conn.QueryRowContext(p.t.Context(), query).Scan(&v); err != nil {
		p.t.Fatalf("%s: %v", query, err)
	}
	return v.String
}

// myExec runs statements (several, separated by semicolons) on the
// MariaDB target.
func (p *pair) myExec(statements string) {
	p.t.Helper()
	conn, close := p.myConn()
	defer close()
	if _, err := conn.ExecContext(p.t.Context(), statements); err != nil {
		p.t.Fatalf("%s: %v", statements, err)
	}
}
