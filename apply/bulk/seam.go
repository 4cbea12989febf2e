package bulk

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// BinaryIO reports whether every type in oids can be copied in binary on
// the server of conn (version is its server_version_num, 0 to read it).
// Exported only for the integration tests (integration/bulkcopy) that
// check binaryIOSQL against a server's catalog; Copy decides on its own.
func BinaryIO(ctx context.Context, conn *pgx.Conn, version int, oids []uint32) (bool, error) {
	return binaryIO(ctx, conn, version, oids)
}
