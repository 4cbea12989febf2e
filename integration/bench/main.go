// Command bench measures how fast decant drains a backlog from a
// PostgreSQL 15 source into a PostgreSQL 15 target, next to PostgreSQL's
// own subscription and to pg_recvlogical (the rate at which the source can
// decode at all), on the same machine in the same run, and into MariaDB.
//
//	go run ./integration/bench [-rows 1000000] [-large-rows 2000000] [-copy-rows 1000000] [-only insert,pgbench,copy] [-cpuprofile DIR]
//	(or: make bench)
//
// Each case loads its workload on the source while nothing consumes (so a
// backlog builds in every slot) and commits one marker row last, then
// times each consumer catching up, every one the same way: from its start
// until the marker is on its target (timing.go), on servers settled
// before each interval (cpu.go). decant runs as in production, decant run
// until SIGTERM. The large case is one transaction, by default far bigger
// than the source's logical_decoding_work_mem: the case where what a
// consumer holds in memory and the streaming of in-progress transactions
// matter. The pgbench and updel cases change rows loaded on the source and
// on every target before any slot exists. The copy case (copy.go) times
// an initial copy instead, next to pg_dump and pg_restore.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/integration/harness"
)

func main() {
	rows := flag.Int("rows", 1000000, "rows inserted by the insert case (the update, delete and single cases change a share of them)")
	largeRows := flag.Int("large-rows", 2000000, "rows inserted by the large case, all in one transaction")
	copyRows := flag.Int("copy-rows", 1000000, "rows of the copy case's largest table")
	only := flag.String("only", defaultCases, "comma list of the cases to run")
	flag.Var(&variants, "variant", "NAME=VAR=VALUE[,VAR=VALUE...]: one more decant run into PostgreSQL in every case, with these environment variables, on a pipeline and target database of its own (repeatable; an A/B test of a change within one run, as the machine's speed swings between runs)")
	flag.StringVar(&profileDir, "cpuprofile", "", "directory for a CPU profile of every decant run (CASE-PIPELINE.pprof from decant run, resync-PIPELINE-SPREAD.pprof from decant resync, both --cpuprofile; the profiler costs the agent a little CPU)")
	flag.Parse()
	picked, err := selectCases(cases(*rows, *largeRows, *copyRows), *only)
	if err == nil && (*rows < 4000 || *largeRows < 1) {
		err = fmt.Errorf("-rows must be at least 4000 and -large-rows at least 1")
	}
	if err == nil {
		// What the README quotes: the command, then the date.
		fmt.Printf("Command: `%s`\n\n", strings.Join(append([]string{"go run ./integration/bench"}, os.Args[1:]...), " "))
		err = run(context.Background(), picked)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench failed:", err)
		os.Exit(1)
	}
}

type result struct {
	consumer string
	elapsed  time.Duration
	rssKiB   int64
	// CPU time over the timed interval: the consumer's own process (none
	// for the subscription, whose apply worker runs in the target server),
	// the source cluster, the server it writes to.
	cpuSelf, cpuSrc, cpuTgt time.Duration
	stall                   time.Duration // the machine's CPU stall over the interval (meter.stall)
	decant                  []string      // the decant run's arguments; nil for other consumers
	err                     error         // why the consumer failed; the figures are then zero
}

// bench is the servers and the decant binary every case uses.
// profileDir is where decant runs write CPU profiles (-cpuprofile); "":
// none.
var profileDir string

type bench struct {
	bin string
	// caseKey is the key of the case being timed, for profile names.
	caseKey string
	src     *harness.Postgres
	tgt     *harness.Postgres
	my      *harness.MariaDB
	srcDSN  string
}

func run(ctx context.Context, picked []benchCase) error {
	began := time.Now()
	dir, err := os.MkdirTemp("", "decant-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b := &bench{}
	if b.bin, err = harness.BuildDecant(ctx, dir); err != nil {
		return err
	}
	// logical_decoding_work_mem stays at its default (64MB) on the source:
	// it decides when the source streams an in-progress transaction, and
	// decant and the subscription must meet the same setting. Durability
	// stays at the defaults too (fsync, synchronous_commit on). Autovacuum
	// is off on both clusters: its work on the tables one consumer filled
	// would otherwise land, at its own moment, in another consumer's timed
	// interval and CPU columns; settle does what is left to do between
	// intervals instead.
	settings := map[string]string{"shared_buffers": "512MB", "max_wal_size": "4GB", "checkpoint_timeout": "30min", "autovacuum": "off"}
	if b.src, err = harness.StartPostgres(ctx, harness.PostgresOptions{Settings: settings}); err != nil {
		return err
	}
	defer b.src.Remove()
	// The subscriber's launcher would otherwise wait up to 5 s before
	// starting the apply worker of a re-enabled subscription.
	tgtSettings := map[string]string{"wal_retrieve_retry_interval": "50ms"}
	for k, v := range settings {
		tgtSettings[k] = v
	}
	if b.tgt, err = harness.StartPostgres(ctx, harness.PostgresOptions{Settings: tgtSettings}); err != nil {
		return err
	}
	defer b.tgt.Remove()
	// A second pipeline from the same source into MariaDB.
	if b.my, err = harness.StartMariaDB(ctx); err != nil {
		return err
	}
	defer b.my.Remove()
	if err := b.printVersions(ctx); err != nil {
		return err
	}
	if err := b.prepare(ctx, picked); err != nil {
		return err
	}

	fmt.Printf("| case | consumer | seconds | rows/s | txns/s | vs subscription | CPU s: agent | source | target | agent µs/row | peak RSS | CPU pressure |\n" +
		"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var notes []string
	var failed []error
	for i, c := range picked {
		var results []result
		var err error
		switch c.key {
		case "copy", "resync":
			var n []string
			if c.key == "copy" {
				results, n, err = b.runCopy(ctx, c)
			} else {
				results, n, err = b.runResync(ctx, c)
			}
			notes = append(notes, n...)
		default:
			results, err = b.runCase(ctx, c, i+1)
			if err == nil && !failedAny(results) {
				err = b.checkTargets(ctx, c)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		printResults(c, results)
		for _, r := range results {
			if r.err != nil {
				failed = append(failed, fmt.Errorf("%s: %s: %w", c.name, r.consumer, r.err))
			}
		}
		if c.large {
			n, err := b.largeNotes(ctx, results)
			if err != nil {
				return err
			}
			notes = append(notes, n...)
		}
		if len(failed) > 0 {
			// The consumer that failed left this backlog in its slot, so
			// it would time the next case wrong.
			break
		}
	}
	durability, err := b.durabilityNote(ctx)
	if err != nil {
		return err
	}
	fmt.Println()
	for _, n := range append(notes, durability) {
		fmt.Println(n)
	}
	fmt.Printf("whole run: %.0f s\n", time.Since(began).Seconds())
	return errors.Join(failed...)
}

// durabilityNote says how each side commits on the target, which weighs
// most where transactions are small: the subscription's apply worker
// commits with its own synchronous_commit (off unless the subscription
// says otherwise), decant with its --synchronous-commit (off by default
// on a PostgreSQL target; the bench leaves it at its default), telling
// the source of a commit only once the target flushed it.
func (b *bench) durabilityNote(ctx context.Context) (string, error) {
	sub, err := queryText(ctx, b.tgt.DSN("native"), `SELECT subsynccommit FROM pg_subscription WHERE subname = 'native'`)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("commits on the PostgreSQL target: the subscription with synchronous_commit = %s (its own setting), decant with --synchronous-commit at its default (off); MariaDB with its server settings", sub), nil
}

// printVersions prints the date and what the figures were measured on.
func (b *bench) printVersions(ctx context.Context) error {
	pg, err := queryText(ctx, b.src.DSN("postgres"), `SHOW server_version`)
	if err != nil {
		return err
	}
	my, err := b.my.Exec(ctx, "", "SELECT VERSION()")
	if err != nil {
		return err
	}
	call, err := syscallCost()
	if err != nil {
		return err
	}
	fmt.Printf("Date: %s; PostgreSQL %s, MariaDB %s, %d CPUs; a system call that does nothing takes %.2f µs\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), pg, strings.TrimSpace(my), runtime.NumCPU(), float64(call)/float64(time.Microsecond))
	return nil
}

// printResults prints a case's rows of the table. "vs subscription" is
// the subscription's seconds over the consumer's (above 1: faster); the
// agent is the consumer's own process, the source and target columns
// the whole server trees (walsenders, backends, the apply worker). CPU
// pressure is the share of the interval during which some task on the
// machine waited for a CPU. Source, walsender, consumer and target can
// want more than two cores between them, so it is not 0 on a quiet
// machine either; far above the same case's other rows, or another
// run's, other work on the machine slowed the figure, the more so for a
// consumer that waits on round trips between processes.
func printResults(c benchCase, results []result) {
	sub := subscription(results)
	for i, r := range results {
		name := c.name
		if i > 0 {
			name = ""
		}
		if r.err != nil {
			fmt.Printf("| %s | %s | failed | | | | | | | | | |\n", name, r.consumer)
			continue
		}
		s := r.elapsed.Seconds()
		ratio, txns, perRow := "", "", ""
		if sub > 0 {
			ratio = fmt.Sprintf("%.2f×", sub.Seconds()/s)
		}
		switch tps := float64(c.txns) / s; {
		case c.txns == 0:
		case tps < 10:
			txns = fmt.Sprintf("%.2f", tps)
		default:
			txns = thousands(int64(tps))
		}
		pressure := ""
		if r.stall >= 0 {
			pressure = fmt.Sprintf("%.0f%%", 100*r.stall.Seconds()/s)
		}
		if r.cpuSelf > 0 {
			perRow = fmt.Sprintf("%.1f", float64(r.cpuSelf.Microseconds())/float64(c.rows))
		}
		fmt.Printf("| %s | %s | %.1f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, r.consumer, s,
			thousands(int64(float64(c.rows)/s)), txns, ratio, seconds(r.cpuSelf), seconds(r.cpuSrc), seconds(r.cpuTgt), perRow, mib(r.rssKiB), pressure)
	}
}

func failedAny(results []result) bool {
	return slices.ContainsFunc(results, func(r result) bool { return r.err != nil })
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// subscription is the wall time of the case's PostgreSQL subscription, 0
// when it has none.
func subscription(results []result) time.Duration {
	for _, r := range results {
		if strings.HasPrefix(r.consumer, "PostgreSQL subscription") && r.err == nil {
			return r.elapsed
		}
	}
	return 0
}

// targetDBs are the PostgreSQL target's databases that take every table:
// decant's, the subscription's, and one per -variant.
func targetDBs() []string {
	dbs := []string{"decant", "native"}
	for i := range variants {
		dbs = append(dbs, variants[i].db())
	}
	return dbs
}

// variant is a decant run that -variant adds to every case: the same as
// decant run → PostgreSQL but for its environment.
type variant struct {
	name string
	env  []string
}

// db and pipeline carry a prefix of their own, so that no variant name
// meets another consumer's (decant_imm, bench_my).
func (v *variant) db() string       { return "decant_v_" + v.name }
func (v *variant) pipeline() string { return "bench_v_" + v.name }

type variantList []variant

var variants variantList

func (l *variantList) String() string { return fmt.Sprint(len(*l)) }

func (l *variantList) Set(s string) error {
	name, env, ok := strings.Cut(s, "=")
	if !ok || name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return fmt.Errorf("want NAME=VAR=VALUE[,VAR=VALUE...] with NAME of lowercase letters, digits and _")
	}
	*l = append(*l, variant{name: name, env: strings.Split(env, ",")})
	return nil
}

// prepare creates the databases and their tables, loads what the picked
// cases change (on the source and every target, the same rows), then
// creates the pipelines, the slots and the subscription, so that each
// finds the whole backlog of every case and nothing of the loading.
func (b *bench) prepare(ctx context.Context, picked []benchCase) error {
	start := time.Now()
	if err := b.src.CreateDatabase(ctx, "bench"); err != nil {
		return err
	}
	b.srcDSN = b.src.DSN("bench")
	for _, db := range targetDBs() {
		if err := b.tgt.CreateDatabase(ctx, db); err != nil {
			return err
		}
	}
	type pgDB struct {
		p  *harness.Postgres
		db string
	}
	dbs := []pgDB{{b.src, "bench"}}
	for _, db := range targetDBs() {
		dbs = append(dbs, pgDB{b.tgt, db})
	}
	for _, d := range dbs {
		if err := execSQL(ctx, d.p.DSN(d.db), schema); err != nil {
			return err
		}
	}
	for _, c := range picked {
		if c.preload == nil {
			continue
		}
		for _, d := range dbs {
			if err := c.preload(ctx, d.p, d.db); err != nil {
				return fmt.Errorf("%s: preload %s: %w", c.name, d.db, err)
			}
		}
		if c.sourceSQL != "" {
			if err := execSQL(ctx, b.srcDSN, c.sourceSQL); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
		}
	}
	// With autovacuum off, nothing would give the loaded tables their
	// statistics, visibility map and hint bits; done here, the same on
	// every database, it stays out of the timed intervals.
	for _, d := range dbs {
		if err := execSQL(ctx, d.p.DSN(d.db), "VACUUM ANALYZE"); err != nil {
			return err
		}
	}
	if out, err := b.decant(ctx, b.tgt.DSN("decant"), "bench", "init").CombinedOutput(); err != nil {
		return fmt.Errorf("decant init: %v\n%s", err, out)
	}
	for _, v := range variants {
		if out, err := b.decant(ctx, b.tgt.DSN(v.db()), v.pipeline(), "init").CombinedOutput(); err != nil {
			return fmt.Errorf("decant init (variant %s): %v\n%s", v.name, err, out)
		}
	}
	// MariaDB's tables, and the rows preloaded on the source, come from
	// decant's own initial copy, consistent with the pipeline's slot.
	if err := b.my.CreateDatabase(ctx, "bench"); err != nil {
		return err
	}
	if out, err := b.decant(ctx, b.my.DSN("bench"), "bench_my", "init", "--copy", "--create-tables",
		"--jobs", fmt.Sprint(runtime.NumCPU())).CombinedOutput(); err != nil {
		return fmt.Errorf("decant init --copy (MariaDB): %v\n%s", err, out)
	}
	// The native subscription and the drain get their own slots on the
	// same publication.
	if err := execSQL(ctx, b.srcDSN, `SELECT pg_create_logical_replication_slot('native', 'pgoutput');
		SELECT pg_create_logical_replication_slot('drain', 'pgoutput');
		SELECT pg_create_logical_replication_slot('warm', 'pgoutput');`); err != nil {
		return err
	}
	if err := execSQL(ctx, b.tgt.DSN("native"), fmt.Sprintf(`CREATE SUBSCRIPTION native CONNECTION '%s' PUBLICATION bench
		WITH (create_slot = false, slot_name = 'native', copy_data = false, enabled = false)`, connString(b.src.Port, "bench"))); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "prepared in %.1f s\n", time.Since(start).Seconds())
	return nil
}

// immTables are the tables of the pipeline bench_imm: the large case's.
const immTables = "public.bench,public.bench_marker"

// prepareImmediate creates the pipeline bench_imm into its own database,
// for decant with --stream-apply immediate. It is created just before the
// large case loads, so its slot holds that case's backlog and no other.
func (b *bench) prepareImmediate(ctx context.Context) error {
	if err := b.tgt.CreateDatabase(ctx, "decant_imm"); err != nil {
		return err
	}
	if err := execSQL(ctx, b.tgt.DSN("decant_imm"), schema); err != nil {
		return err
	}
	if out, err := b.decant(ctx, b.tgt.DSN("decant_imm"), "bench_imm", "init", "--tables", immTables).CombinedOutput(); err != nil {
		return fmt.Errorf("decant init (bench_imm): %v\n%s", err, out)
	}
	return nil
}

func (b *bench) decant(ctx context.Context, target, pipeline string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, b.bin, append(args, "--source", b.srcDSN, "--target", target, "--pipeline", pipeline)...)
	for _, v := range variants {
		if v.pipeline() == pipeline {
			cmd.Env = append(os.Environ(), v.env...)
		}
	}
	return cmd
}

// consumer is one timed way of draining a case's backlog. time starts
// and stops the meter itself, around exactly what is timed.
type consumer struct {
	name string
	time func(ctx context.Context, m *meter) (result, error)
	// writes names the server the consumer writes to: "pg" (the target
	// cluster), "mariadb", or "" (none).
	writes string
}

// timeCPU settles the servers, times consumer k and adds what the
// servers used meanwhile.
func (b *bench) timeCPU(ctx context.Context, k consumer) (result, error) {
	if err := b.settle(ctx); err != nil {
		return result{}, err
	}
	m := &meter{b: b}
	r, err := k.time(ctx, m)
	if err != nil {
		return r, err
	}
	if !m.stopped {
		return r, fmt.Errorf("bench: consumer %s did not stop its meter", k.name)
	}
	r.elapsed, r.stall = m.elapsed, m.stall
	r.cpuSrc = m.after.src - m.before.src
	switch k.writes {
	case "pg":
		r.cpuTgt = m.after.tgt - m.before.tgt
	case "mariadb":
		r.cpuTgt = m.after.my - m.before.my
	}
	return r, nil
}

// runCase loads the case's workload and its marker, and times each
// consumer draining them.
func (b *bench) runCase(ctx context.Context, c benchCase, markerID int) ([]result, error) {
	if c.large {
		if err := b.prepareImmediate(ctx); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if err := c.load(ctx, b); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	mk, err := b.commitMarker(ctx, markerID)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "%s: loaded in %.1f s\n", c.name, time.Since(start).Seconds())
	// An untimed drain first, so that every timed consumer finds the
	// WAL in the page cache and none pays for reading it from disk.
	if _, err := runCmd("warm-up", b.drain(ctx, "warm", mk.end)); err != nil {
		return nil, err
	}
	// A consumer that fails is reported with the others' figures: while a
	// feature is being built, the rest of the case still says something.
	var results []result
	b.caseKey = c.key
	for _, k := range b.consumers(c, mk) {
		r, err := b.timeCPU(ctx, k)
		r.consumer, r.err = k.name, err
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %s: failed\n", c.name, k.name)
		} else {
			fmt.Fprintf(os.Stderr, "%s: %s: %.1f s\n", c.name, k.name, r.elapsed.Seconds())
		}
		results = append(results, r)
	}
	fmt.Fprintf(os.Stderr, "%s: end to end %.1f s\n", c.name, time.Since(start).Seconds())
	return results, nil
}

// consumers lists what drains case c up to its marker mk.
func (b *bench) consumers(c benchCase, mk marker) []consumer {
	drain := consumer{"pg_recvlogical (decode only)", func(ctx context.Context, m *meter) (result, error) {
		return b.timeDrain(ctx, m, "drain", mk)
	}, ""}
	decantPG := func(name, db, pipeline string, args ...string) consumer {
		return consumer{name, func(ctx context.Context, m *meter) (result, error) {
			p, err := newPGPoller(ctx, b.tgt.DSN(db))
			if err != nil {
				return result{}, err
			}
			return b.timeDecant(ctx, m, p, mk, b.tgt.DSN(db), pipeline, args)
		}, "pg"}
	}
	decantMy := consumer{"decant run → MariaDB", func(ctx context.Context, m *meter) (result, error) {
		p, err := newMyPoller(ctx, b.my.Port, "bench")
		if err != nil {
			return result{}, err
		}
		return b.timeDecant(ctx, m, p, mk, b.my.DSN("bench"), "bench_my", nil)
	}, "mariadb"}
	native := func(name string, streaming bool) consumer {
		return consumer{name, func(ctx context.Context, m *meter) (result, error) {
			return b.timeNative(ctx, m, mk, streaming)
		}, "pg"}
	}
	list := []consumer{
		drain,
		decantPG("decant run → PostgreSQL", "decant", "bench"),
		native("PostgreSQL subscription", false),
		decantMy,
	}
	if c.large {
		list = []consumer{
			drain,
			decantPG("decant run → PostgreSQL (default --stream-apply spool)", "decant", "bench"),
			decantPG("decant run → PostgreSQL --stream-apply immediate", "decant_imm", "bench_imm", "--stream-apply", "immediate"),
			native(streamingSubscription, true),
			decantMy,
		}
	}
	// In every case, the large one too: a variant's slot left with a
	// case's backlog would decode it again inside the next case's timing.
	for _, v := range variants {
		list = append(list, decantPG("decant run → PostgreSQL ["+v.name+"]", v.db(), v.pipeline()))
	}
	return list
}

const streamingSubscription = "PostgreSQL subscription (streaming = on)"

// rssGoal (over decant's --max-txn-memory) and the streaming
// subscription's time are the team's goals for decant on the large case;
// the bench prints them next to the figures and leaves judging to whoever
// reads them.
const rssGoal = 32 << 10 // KiB above --max-txn-memory

// largeNotes says, per decant run of the large case, the memory bound it
// ran with and how its figures compare with the goals.
func (b *bench) largeNotes(ctx context.Context, results []result) ([]string, error) {
	workMem, err := queryText(ctx, b.srcDSN, `SHOW logical_decoding_work_mem`)
	if err != nil {
		return nil, err
	}
	notes := []string{fmt.Sprintf("large case: source logical_decoding_work_mem = %s (left at its default, the same for decant and the subscription)", workMem)}
	var sub time.Duration
	for _, r := range results {
		if r.consumer == streamingSubscription {
			sub = r.elapsed
		}
	}
	for _, r := range results {
		if r.decant == nil {
			continue
		}
		mem, goal := "64MiB (decant's default)", mib(64<<10+rssGoal)
		if i := slices.Index(r.decant, "--max-txn-memory"); i >= 0 && i+1 < len(r.decant) {
			mem, goal = r.decant[i+1], r.decant[i+1]+" + 32 MiB"
		}
		if r.err != nil {
			notes = append(notes, fmt.Sprintf("large case: %s: --max-txn-memory %s; failed (the error follows the table)", r.consumer, mem))
			continue
		}
		n := fmt.Sprintf("large case: %s: --max-txn-memory %s; peak RSS %s (goal ≤ %s); %.1f s",
			r.consumer, mem, mib(r.rssKiB), goal, r.elapsed.Seconds())
		if sub > 0 {
			n += fmt.Sprintf(" = %.2f× the streaming subscription's %.1f s (goal ≤ 1.00×)", r.elapsed.Seconds()/sub.Seconds(), sub.Seconds())
		}
		notes = append(notes, n)
	}
	return notes, nil
}

func mib(kib int64) string {
	if kib <= 0 {
		return ""
	}
	return fmt.Sprintf("%d MiB", kib/1024)
}

func connString(port int, db string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=%s sslmode=disable", port, db)
}

func queryText(ctx context.Context, dsn, sql string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var s string
	err = conn.QueryRow(ctx, sql).Scan(&s)
	return s, err
}

func execSQL(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}
