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

func (d driverLog) Print(v ...any) {
	d.log.Warn(strings.TrimSpace(fmt.Sprint(v...)), "component", "mysql-driver")
}
