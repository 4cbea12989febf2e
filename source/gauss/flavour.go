package gauss

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5/pgconn"
)

// Flavour is which of the two servers decant is connected to. They share
// the protocol and the decoders' byte layouts but not their catalogs or
// their option parsers.
type Flavour uint8

const (
	// OpenGauss is the open-source server (opengauss-mirror/openGauss-server),
	// and builds of it such as openGauss-lite.
	OpenGauss Flavour = iota + 1
	// GaussDB is Huawei's GaussDB Kernel, whose source is not public.
	GaussDB
)

func (f Flavour) String() string {
	switch f {
	case OpenGauss:
		return "openGauss"
	case GaussDB:
		return "GaussDB"
	}
	return "unknown server"
}

// ServerVersion is what version() says about the server.
type ServerVersion struct {
	Flavour Flavour
	Version string // as printed: "7.0.0-RC2", "505.1.0", "V500R002C00"
}

func (v ServerVersion) String() string { return v.Flavour.String() + " " + v.Version }

// What version() prints (PG_VERSION_STR). openGauss builds it in
// configure(.in) and cmake/src/buildfunction.sh get_gs_version as
// "(<product> <version> build <commit>) compiled at ... on <host>, compiled
// by <cc>, 64-bit", the product and version coming from
// build/script/gaussdb.ver (PRODUCT=openGauss, with -lite or -finance
// appended for those modes); multi-node builds put "openGauss <version> "
// in front. GaussDB Kernel prints "gaussdb (GaussDB Kernel 505.1.0 build
// ...) ..." (older: "PostgreSQL 9.2.4 (GaussDB Kernel V500R001C20 build
// ...)"), as gsql's banner and users' reports show.
var (
	reGaussDBVersion   = regexp.MustCompile(`\(GaussDB Kernel ([^ )]+)`)
	reOpenGaussVersion = regexp.MustCompile(`\(openGauss(?:-[a-z]+)? ([^ )]+) build\b|^openGauss ([^ ]+) `)
)

// ParseServerVersion reads the flavour and version from the text of
// version().
func ParseServerVersion(s string) (ServerVersion, error) {
	if m := reGaussDBVersion.FindStringSubmatch(s); m != nil {
		return ServerVersion{Flavour: GaussDB, Version: m[1]}, nil
	}
	if m := reOpenGaussVersion.FindStringSubmatch(s); m != nil {
		return ServerVersion{Flavour: OpenGauss, Version: m[1] + m[2]}, nil
	}
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return ServerVersion{}, fmt.Errorf("source server's version() is %q, neither openGauss nor GaussDB Kernel: "+
		"a gaussdb:// or opengauss:// source must be one of those two", s)
}

// serverKey is where a connection keeps what server detects (pgconn's
// CustomData), so version() runs once per connection.
const serverKey = "decant.gauss.server"

// server returns the flavour and version of the server conn is connected
// to, asking version() the first time.
func server(ctx context.Context, conn *pgconn.PgConn) (ServerVersion, error) {
	if v, ok := conn.CustomData()[serverKey].(ServerVersion); ok {
		return v, nil
	}
	row, err := queryRow(ctx, conn, "SELECT pg_catalog.version()")
	if err != nil || len(row) < 1 {
		return ServerVersion{}, fmt.Errorf("read the source server's version: %w", errOr(err, "no answer"))
	}
	v, err := ParseServerVersion(row[0])
	if err != nil {
		return ServerVersion{}, err
	}
	conn.CustomData()[serverKey] = v
	return v, nil
}
