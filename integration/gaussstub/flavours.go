package gaussstub

// flavour is what differs between the two servers the stand-in plays.
type flavour struct {
	scheme string
	// version is what SELECT version() prints.
	version string
	// slotColumns are pg_replication_slots' columns.
	slotColumns map[string]bool
	// csnSlots: pg_create_logical_replication_slot takes output_order.
	csnSlots bool
	// serial and parallel are the options each decoding mode's parser
	// takes; any other name is `option "%s" = "%s" is unknown`.
	serial, parallel map[string]bool
	// memoryMax bounds max-txn-in-memory and max-reorderbuffer-in-memory
	// in parallel decoding (0: no bound the stand-in checks).
	memoryMax int
}

// memorySerialMax bounds the two memory options in serial decoding, on
// both servers (openGauss logical.cpp ParseDecodingOptionPlugin, const
// maxTxn and maxReorderBuffer; GaussDB's seed: 0..100).
const memorySerialMax = 100

var flavours = map[string]*flavour{
	"":        gaussDB,
	"gaussdb": gaussDB,
	"opengauss": {
		scheme: "opengauss",
		// As configure and cmake/src/buildfunction.sh get_gs_version
		// build PG_VERSION_STR from build/script/gaussdb.ver.
		version: "(openGauss 7.0.0-RC2 build 1f1f1f1f) compiled at 2025-08-01 10:00:00 commit 0 last mr  on x86_64-unknown-linux-gnu, compiled by g++ (GCC) 10.3.0, 64-bit",
		// src/common/backend/catalog/system_views.sql, CREATE VIEW
		// pg_replication_slots.
		slotColumns: setOf("slot_name", "plugin", "slot_type", "datoid", "database", "active", "xmin",
			"catalog_xmin", "restart_lsn", "dummy_standby", "confirmed_flush"),
		// src/gausskernel/storage/replication/logical/logical.cpp
		// ParseDecodingOptionPlugin, which mppdb_decoding's
		// pg_decode_startup calls for every option.
		serial: setOf("force-binary", "include-xids", "include-timestamp", "skip-empty-xacts", "only-local",
			"white-table-list", "standby-connection", "max-txn-in-memory", "sender-timeout",
			"max-reorderbuffer-in-memory", "include-originid", "parallel-decode-num"),
		// .../logical/parallel_decode_worker.cpp ParseDecodingOption.
		parallel: setOf("include-xids", "include-timestamp", "skip-empty-xacts", "only-local", "standby-connection",
			"sending-batch", "decode-style", "max-txn-in-memory", "max-reorderbuffer-in-memory", "white-table-list",
			"parallel-queue-size", "sender-timeout", "include-originid", "parallel-decode-num"),
		memoryMax: 100,
	},
}

// gaussDB is GaussDB Kernel as its documentation (the seed) describes it.
var gaussDB = &flavour{
	scheme:  "gaussdb",
	version: "gaussdb (GaussDB Kernel 505.1.0 build 8ac3f9b2) compiled at 2024-09-20 10:00:00 commit 0 last mr  release on x86_64-unknown-linux-gnu, compiled by g++ (GCC) 10.3.0, 64-bit",
	slotColumns: setOf("slot_name", "plugin", "slot_type", "datoid", "database", "active", "xmin",
		"catalog_xmin", "restart_lsn", "dummy_standby", "confirmed_flush", "confirmed_csn"),
	csnSlots: true,
	serial:   serialOptions,
	parallel: union(serialOptions, parallelOnly),
}

func union(a, b map[string]bool) map[string]bool {
	m := make(map[string]bool, len(a)+len(b))
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}
