package mysql

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// RouteDriverLog sends the MySQL driver's own messages ("closing bad idle
// connection", "unexpected EOF") to log as warnings, instead of the
// driver's unstructured lines on stderr. The driver's logger is global
// (mysql.SetLogger; a Config copies it when made), so this is called once,
// where the process's logger is built, before any connection is made.
func RouteDriverLog(log *slog.Logger) {
	mysql.SetLogger(driverLog{log})
}

// driverLog adapts a *slog.Logger to the driver's Logger.
type driverLog struct{ log *slog.Logger }

// Print logs one driver message. The driver puts the file and line it
// logs from first ("packets.go:58 unexpected EOF"); that becomes the
// attribute "at".
func (d driverLog) Print(v ...any) {
	msg := strings.TrimSpace(fmt.Sprint(v...))
	attrs := []any{"component", "mysql-driver"}
	if at, rest, ok := strings.Cut(msg, " "); ok && strings.Contains(at, ".go:") {
		msg, attrs = rest, append(attrs, "at", at)
	}
	d.log.Warn(msg, attrs...)
}
