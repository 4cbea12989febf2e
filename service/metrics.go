package service

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/source"
)

// NewRegistry makes the registry /metrics serves: the pipeline's metrics
// read from s on every scrape, Go's runtime and the process's, all
// labelled pipeline="<name>". Other packages (notifications) register
// theirs with Register on the registry returned, through the same label.
func NewRegistry(s *State) *Registry {
	reg := prometheus.NewRegistry()
	labelled := prometheus.WrapRegistererWith(prometheus.Labels{"pipeline": s.pipeline}, reg)
	labelled.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newCollector(s), s.commitSeconds, s.batch)
	return &Registry{reg: reg, Registerer: labelled}
}

// Registry is the registry /metrics serves; its Registerer adds the
// pipeline label to whatever is registered through it.
type Registry struct {
	reg *prometheus.Registry
	prometheus.Registerer
}

// Gatherer is what /metrics gathers from.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// collector reads State on scrape. Its descriptions are the metric
// contract (docs/operations.md, "Metrics and health").
type collector struct {
	s *State

	up, streaming, srcConn, tgtConn        *prometheus.Desc
	reconnects, errors, resyncs            *prometheus.Desc
	lagBytes, lagSeconds, lastCommit       *prometheus.Desc
	applied, flushed                       *prometheus.Desc
	txns, changes, bytes, commits          *prometheus.Desc
	conflicts, ddlRejected                 *prometheus.Desc
	spillBytes, spillFiles                 *prometheus.Desc
	walStatus, retained, slotCheck         *prometheus.Desc
	copyRows, copyRowsEstimated, copyBytes *prometheus.Desc
	connTLS                                *prometheus.Desc
}

func newCollector(s *State) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("decant_"+name, help, labels, nil)
	}
	return &collector{s: s,
		up:                d("up", "1 while the process runs the pipeline."),
		streaming:         d("streaming", "1 while a session streams and applies, 0 otherwise."),
		srcConn:           d("source_connected", "1 while the replication connection to the source is up."),
		tgtConn:           d("target_connected", "1 while the connection to the target is up."),
		reconnects:        d("reconnects_total", "Sessions resumed after a transient failure."),
		errors:            d("errors_total", "Errors that ended a session, by class.", "class"),
		resyncs:           d("resyncs_total", "Resyncs run --on-slot-lost resync ran after finding the slot lost, by result.", "result"),
		lagBytes:          d("lag_bytes", "Source WAL end (keepalive, IDENTIFY_SYSTEM, slot check) minus the applied checkpoint position."),
		lagSeconds:        d("lag_seconds", "Now minus the source commit time of the oldest transaction not yet applied; 0 when caught up."),
		lastCommit:        d("last_applied_commit_timestamp_seconds", "Source commit time (unix seconds) of the last applied transaction."),
		applied:           d("applied_position_bytes", "Applied checkpoint position (LSN as a number)."),
		flushed:           d("flushed_position_bytes", "Position acknowledged to the source as flushed (LSN as a number)."),
		txns:              d("transactions_applied_total", "Source transactions committed on the target."),
		changes:           d("changes_applied_total", "Row changes and schema changes applied, by operation.", "op"),
		conflicts:         d("conflicts_total", "Conflicts a --on-conflict policy resolved (each logged in the target's conflict table), by kind and policy.", "kind", "policy"),
		ddlRejected:       d("ddl_rejected_total", "Schema changes from the stream refused and not applied (not written by decant's own capture, or on a pipeline initialised without --ddl); the stream goes on."),
		bytes:             d("bytes_applied_total", "Decoded change bytes applied."),
		commits:           d("target_commits_total", "Target commits (each with the checkpoint row)."),
		spillBytes:        d("spill_bytes", "Bytes in spill files in use."),
		spillFiles:        d("spill_files", "Spill files in use."),
		walStatus:         d("slot_wal_status", "1 for the slot's current wal_status, 0 for the others.", "status"),
		retained:          d("slot_retained_wal_bytes", "Source WAL end minus the slot's restart_lsn, at the last slot check."),
		slotCheck:         d("slot_check_timestamp_seconds", "Time (unix seconds) of the last successful slot check."),
		copyRows:          d("copy_rows_done", "Rows copied of a table by the initial copy.", "table"),
		copyRowsEstimated: d("copy_rows_estimated", "The source's estimate of a table's rows, for the initial copy.", "table"),
		copyBytes:         d("copy_bytes_done", "Bytes copied of a table by the initial copy.", "table"),
		connTLS:           d("connection_tls", "1 when the side's last connection is encrypted (TLS), 0 when plain; verified: the server's certificate chain and name were checked.", "side", "verified"),
	}
}

var _ prometheus.Collector = (*collector)(nil)

func (c *collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

// walStatuses are the values of pg_replication_slots.wal_status.
var walStatuses = []string{"reserved", "extended", "unreserved", "lost"}

// opNames are the op label's values, by source.Op.
var opNames = []source.Op{source.OpInsert, source.OpUpdate, source.OpDelete, source.OpTruncate, source.OpDDL}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s, v := c.s, c.s.Snapshot()
	gauge := func(d *prometheus.Desc, x float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, x, labels...)
	}
	counter := func(d *prometheus.Desc, x float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, x, labels...)
	}
	gauge(c.up, 1)
	gauge(c.streaming, bit(v.Streaming))
	gauge(c.srcConn, bit(v.Streaming))
	gauge(c.tgtConn, bit(v.Streaming))
	counter(c.reconnects, float64(s.reconnects.Load()))
	for i, class := range errorClasses {
		counter(c.errors, float64(s.errors[i].Load()), string(class))
	}
	for i, result := range resyncResults {
		counter(c.resyncs, float64(s.resyncs[i].Load()), result)
	}
	gauge(c.lagBytes, float64(v.LagBytes))
	gauge(c.lagSeconds, v.LagSeconds)
	gauge(c.lastCommit, unixSeconds(v.LastCommit.UnixNano()))
	gauge(c.applied, float64(v.Applied))
	gauge(c.flushed, float64(v.Flushed))
	counter(c.txns, float64(v.Txns))
	counter(c.ddlRejected, float64(s.ddlRejected.Load()))
	for _, op := range opNames {
		counter(c.changes, float64(s.changes[op].Load()), op.String())
	}
	for _, k := range apply.ConflictKinds() {
		for _, p := range k.Resolving() {
			counter(c.conflicts, float64(s.conflicts[k][p].Load()), k.String(), p.String())
		}
	}
	counter(c.bytes, float64(v.Bytes))
	counter(c.commits, float64(v.Commits))
	var spillBytes, spillFiles int64
	if s.spill != nil {
		spillBytes, spillFiles = s.spill.Bytes(), s.spill.Files()
	}
	gauge(c.spillBytes, float64(spillBytes))
	gauge(c.spillFiles, float64(spillFiles))
	for _, st := range walStatuses {
		gauge(c.walStatus, bit(v.Slot.WALStatus == st), st)
	}
	gauge(c.retained, float64(retained(v.Slot)))
	gauge(c.slotCheck, unixSeconds(s.slotCheckTime.Load()))
	c.collectCopy(gauge)
	if l := s.links.Load(); l != nil {
		for _, st := range l.States() {
			gauge(c.connTLS, bit(st.Encrypted), st.Side, strconv.FormatBool(st.Verified))
		}
	}
}

// collectCopy gives the initial copy's gauges, per table.
func (c *collector) collectCopy(gauge func(*prometheus.Desc, float64, ...string)) {
	s := c.s
	s.mu.Lock()
	tables := make([]source.TableName, len(s.copyOrder))
	copy(tables, s.copyOrder)
	s.mu.Unlock()
	for _, name := range tables {
		t := s.copyTable(name)
		gauge(c.copyRows, float64(t.rows.Load()), name.String())
		gauge(c.copyRowsEstimated, float64(t.estRows.Load()), name.String())
		gauge(c.copyBytes, float64(t.bytes.Load()), name.String())
	}
}

// retained is the WAL the slot holds back, 0 when unknown.
func retained(st source.SlotState) int64 {
	if st.Restart == 0 || st.WALEnd <= st.Restart {
		return 0
	}
	return int64(st.WALEnd - st.Restart)
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unixSeconds(ns int64) float64 {
	if ns <= 0 {
		return 0
	}
	return float64(ns) / 1e9
}
