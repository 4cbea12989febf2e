package bulk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/source"
)

// copier runs one Copy: it plans on a first source session that holds the
// table locks for the whole copy, then hands the tasks not done, largest
// first, to Jobs workers, each with its own source session (in the same
// snapshot) and target connection.
type copier struct {
	cfg  Config
	prog *progress
	log  *slog.Logger

	mu  sync.Mutex // guards tables' left counters and res
	res Result
}

// tableJob is one source table of the copy.
type tableJob struct {
	def         *source.TableDef
	rel         *source.Relation // the copied columns
	partitioned bool
	target      source.TableName
	left        int // tasks not done
}

// writer copies one task into the target: its rows and its done mark in
// one target transaction. It returns the rows written.
type writer interface {
	copy(ctx context.Context, src *srcSession, j *tableJob, t *task, prog *progress) (rows int64, err error)
	close(ctx context.Context)
}

// errSourceAgain asks the worker for a new source session and one more
// attempt at the task (the writer changed how it writes).
var errSourceAgain = errors.New("retry the task on a new source session")

func (c *copier) run(ctx context.Context) (Result, error) {
	src, err := openSource(ctx, c.cfg.Source, c.cfg.Snapshot)
	if err != nil {
		return Result{}, err
	}
	defer src.close(ctx)
	names := make([]source.TableName, len(c.cfg.Tables))
	for i, def := range c.cfg.Tables {
		names[i] = def.Name
	}
	if err := src.lock(ctx, names, c.log); err != nil {
		return Result{}, err
	}
	st, err := openTarget(ctx, c.cfg.Target)
	if err != nil {
		return Result{}, err
	}
	jobs, todo, err := c.plan(ctx, src, st)
	st.close(ctx)
	if err != nil {
		return c.res, err
	}
	if len(todo) == 0 {
		return c.res, nil
	}
	c.log.Info("copying tables", "tables", len(jobs), "tasks", len(todo), "skipped_tasks", c.res.Skipped, "jobs", c.cfg.Jobs)
	err = c.runTasks(ctx, jobs, todo)
	return c.res, err
}

// plan loads or makes the task list, checks the target tables, and
// returns the tables by name and the tasks to copy, largest first.
func (c *copier) plan(ctx context.Context, src *srcSession, st *targetState) (map[source.TableName]*tableJob, []*task, error) {
	if err := st.ensure(ctx); err != nil {
		return nil, nil, err
	}
	stored, err := st.loadState(ctx, c.cfg.Pipeline)
	if err != nil {
		return nil, nil, err
	}
	byTable := map[source.TableName][]task{}
	for _, t := range stored {
		if t.AsOf != c.cfg.AsOf {
			return nil, nil, fmt.Errorf("%w: pipeline %s was copied as of %s, this copy is as of %s; run decant drop --yes and empty the target tables to start over",
				ErrDifferentAsOf, c.cfg.Pipeline, t.AsOf, c.cfg.AsOf)
		}
		byTable[t.Table] = append(byTable[t.Table], t)
	}
	jobs := map[source.TableName]*tableJob{}
	var fresh, all []task
	for _, def := range c.cfg.Tables {
		sz, partitioned, err := src.measure(ctx, def.Name)
		if err != nil {
			return nil, nil, err
		}
		j := &tableJob{def: def, rel: def.PublishedRelation(), partitioned: partitioned, target: c.cfg.Router.Route(def.Name)}
		jobs[def.Name] = j
		tasks := byTable[def.Name]
		if len(tasks) == 0 {
			tasks = split(def.Name, c.cfg.AsOf, sz, c.cfg.SplitBytes)
			fresh = append(fresh, tasks...)
		}
		anyDone := false
		for _, t := range tasks {
			anyDone = anyDone || t.Done
		}
		if !anyDone {
			full, err := st.hasRows(ctx, j.target)
			if err != nil {
				return nil, nil, err
			}
			if full {
				return nil, nil, fmt.Errorf("%w: %s holds rows and none of its copy is done; empty it or drop and re-create it, then run again",
					ErrNotEmpty, j.target)
			}
		}
		all = append(all, tasks...)
	}
	if err := st.store(ctx, c.cfg.Pipeline, fresh); err != nil {
		return nil, nil, err
	}
	return jobs, c.report(jobs, all), nil
}

// report tells Progress the plan and what earlier calls copied, and
// returns the tasks left, largest first.
func (c *copier) report(jobs map[source.TableName]*tableJob, all []task) []*task {
	type totals struct{ estRows, estBytes, rows, bytes int64 }
	sums := map[source.TableName]*totals{}
	var todo []*task
	for i := range all {
		t := &all[i]
		s := sums[t.Table]
		if s == nil {
			s = &totals{}
			sums[t.Table] = s
		}
		s.estRows += t.EstRows
		s.estBytes += t.EstBytes
		if t.Done {
			s.rows += t.Rows
			s.bytes += t.Bytes
			c.res.Skipped++
			continue
		}
		jobs[t.Table].left++
		todo = append(todo, t)
	}
	for _, def := range c.cfg.Tables {
		s := sums[def.Name]
		c.prog.planned(def.Name, s.estRows, s.estBytes)
		c.prog.copied(def.Name, s.rows, s.bytes)
		if jobs[def.Name].left == 0 {
			c.prog.done(def.Name)
		}
	}
	slices.SortStableFunc(todo, func(a, b *task) int { return cmp.Compare(b.EstBytes, a.EstBytes) })
	return todo
}

// runTasks copies the tasks with up to Jobs workers; the first error
// stops the others.
func (c *copier) runTasks(ctx context.Context, jobs map[source.TableName]*tableJob, todo []*task) error {
	queue := make(chan *task, len(todo))
	for _, t := range todo {
		queue <- t
	}
	close(queue)
	g, gctx := errgroup.WithContext(ctx)
	for range min(c.cfg.Jobs, len(todo)) {
		g.Go(func() error { return c.work(gctx, jobs, queue) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return context.Cause(ctx)
}

// work is one worker: its own source session and target connection,
// taking tasks until the queue is empty.
func (c *copier) work(ctx context.Context, jobs map[source.TableName]*tableJob, queue <-chan *task) error {
	src, err := openSource(ctx, c.cfg.Source, c.cfg.Snapshot)
	if err != nil {
		return err
	}
	defer func() { src.close(ctx) }()
	w, err := c.newWriter(ctx)
	if err != nil {
		return err
	}
	defer w.close(ctx)
	for t := range queue {
		if err := ctx.Err(); err != nil {
			return nil // another worker failed, or the caller stopped
		}
		j := jobs[t.Table]
		rows, err := w.copy(ctx, src, j, t, c.prog)
		if errors.Is(err, errSourceAgain) {
			src.close(ctx)
			if src, err = openSource(ctx, c.cfg.Source, c.cfg.Snapshot); err != nil {
				return err
			}
			rows, err = w.copy(ctx, src, j, t, c.prog)
		}
		if err != nil {
			if ctx.Err() != nil && context.Cause(ctx) != ctx.Err() {
				return nil // stopped by another worker's error, which is the one to report
			}
			return fmt.Errorf("copy table %s, %s: %w", t.Table, t.String(), err)
		}
		c.finished(j, t, rows)
	}
	return nil
}

// finished counts a committed task and reports a table whose tasks are
// all done.
func (c *copier) finished(j *tableJob, t *task, rows int64) {
	c.mu.Lock()
	j.left--
	last := j.left == 0
	c.res.Tasks++
	c.res.Rows += rows
	c.res.Bytes += t.Bytes
	if last {
		c.res.Tables++
	}
	c.mu.Unlock()
	c.log.Debug("copied", "table", t.Table.String(), "task", t.String(), "rows", rows, "bytes", t.Bytes)
	if last {
		c.prog.done(t.Table)
	}
}

func (c *copier) newWriter(ctx context.Context) (writer, error) {
	if mysql.IsDSN(c.cfg.Target) {
		return newMySQLWriter(ctx, c.cfg, c.log)
	}
	return newPGWriter(ctx, c.cfg)
}
