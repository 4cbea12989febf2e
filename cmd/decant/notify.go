package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/notify"
	"github.com/decant/decant/service"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
)

// webhookFlags are the notification flags of run and migrate.
type webhookFlags struct {
	urls       []string
	secret     string
	secretFile string
	alertLag   time.Duration
}

// closeWebhooksWithin bounds how long decant waits at exit for its last
// events (the pipeline_stopped among them) to be delivered.
const closeWebhooksWithin = 15 * time.Second

func addWebhookFlags(cmd *cobra.Command, w *webhookFlags) {
	fs := cmd.Flags()
	fs.StringArrayVar(&w.urls, "webhook", nil, "POST JSON events (the pipeline stopped on an error, a copy finished; docs/operations.md#notifications) to this URL in the background, retried; repeatable (the file's webhooks: list also takes headers)")
	fs.StringVar(&w.secret, "webhook-secret", "", "sign each webhook request with HMAC-SHA256 of this secret (X-Decant-Signature); visible in ps: prefer --webhook-secret-file or DECANT_WEBHOOK_SECRET")
	fs.StringVar(&w.secretFile, "webhook-secret-file", "", "file holding the webhook secret (one trailing newline is dropped)")
	fs.DurationVar(&w.alertLag, "alert-lag", 5*time.Minute, "the replication lag past which the lag_high event is due, and lag_ok once back under; 0 turns lag events off")
}

// notifyConfig is the notifier's configuration from the flags and the
// file's webhooks: entries, which add to the --webhook URLs.
func (w webhookFlags) notifyConfig(c config, log *slog.Logger) (notify.Config, error) {
	cfg := notify.Config{Pipeline: c.Pipeline, AlertLag: w.alertLag, Logger: log}
	for _, u := range w.urls {
		cfg.Targets = append(cfg.Targets, notify.Target{URL: u})
	}
	cfg.Targets = append(cfg.Targets, c.Webhooks...)
	secret, err := w.readSecret()
	if err != nil {
		return cfg, err
	}
	cfg.Secret = secret
	if err := cfg.Validate(); err != nil {
		return cfg, usagef("%v (webhooks are numbered --webhook first, then the file's webhooks: entries)", err)
	}
	return cfg, nil
}

// readSecret is --webhook-secret, or the contents of
// --webhook-secret-file less one trailing newline.
func (w webhookFlags) readSecret() (string, error) {
	if w.secretFile == "" {
		return w.secret, nil
	}
	if w.secret != "" {
		return "", usagef("--webhook-secret and --webhook-secret-file both give the secret; keep one")
	}
	data, err := os.ReadFile(w.secretFile)
	if err != nil {
		return "", usagef("--webhook-secret-file: %v", err)
	}
	secret := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if secret == "" {
		return "", usagef("--webhook-secret-file %s is empty: write the secret into it", w.secretFile)
	}
	return secret, nil
}

// startNotifier starts the notifier of run or migrate. Its workers run
// under a context that the signals do not cancel, so that the final
// event still goes out; stopNotifier ends them.
func startNotifier(ctx context.Context, c config, w webhookFlags, log *slog.Logger) (*notify.Notifier, error) {
	cfg, err := w.notifyConfig(c, log)
	if err != nil {
		return nil, err
	}
	return notify.New(context.WithoutCancel(ctx), cfg)
}

// stopNotifier waits up to closeWebhooksWithin for the queued events.
func stopNotifier(ctx context.Context, n *notify.Notifier, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeWebhooksWithin)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		log.Warn(err.Error())
	}
}

// notifyStopped sends pipeline_stopped for the error run or migrate ends
// with, with where it happened when the error says. A shutdown by
// SIGINT or SIGTERM ends without an error and sends nothing.
func notifyStopped(n *notify.Notifier, err error) {
	if err == nil {
		return
	}
	var at notify.At
	var applyErr *apply.Error
	if errors.As(err, &applyErr) {
		at.Xid = applyErr.Xid
		if applyErr.Commit != 0 {
			at.LSN = applyErr.Commit.String()
		}
		if applyErr.Table.Name != "" {
			at.Table = applyErr.Table.String()
		}
	}
	var rowErr *gauss.UnavailableRowError
	if errors.As(err, &rowErr) {
		at.Xid, at.LSN, at.Table = rowErr.Xid, rowErr.LSN.String(), rowErr.Table.String()
	}
	n.PipelineStopped(strings.ReplaceAll(err.Error(), "\n", " "), at)
}

// readWebhooks reads the file's webhooks: [{url, headers: {name: value}}].
func (f *fileSettings) readWebhooks(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return usagef("%s line %d: webhooks: want a list of {url: ..., headers: {name: value}}", f.path, n.Line)
	}
	for _, item := range n.Content {
		t, err := f.readWebhook(item)
		if err != nil {
			return err
		}
		f.webhooks = append(f.webhooks, t)
	}
	return nil
}

func (f *fileSettings) readWebhook(n *yaml.Node) (notify.Target, error) {
	var t notify.Target
	if n.Kind != yaml.MappingNode {
		return t, usagef("%s line %d: webhooks: want url: and optional headers: in each entry", f.path, n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case k.Value == "url" && v.Kind == yaml.ScalarNode:
			t.URL = v.Value
		case k.Value == "headers" && v.Kind == yaml.MappingNode:
			headers, err := f.headerMap(v)
			if err != nil {
				return t, err
			}
			t.Headers = headers
		case k.Value == "url" || k.Value == "headers":
			return t, usagef("%s line %d: webhooks %s: want url: URL and headers: {name: value}", f.path, v.Line, k.Value)
		default:
			return t, usagef("%s line %d: unknown key %q under webhooks (want url or headers)", f.path, k.Line, k.Value)
		}
	}
	if t.URL == "" {
		return t, usagef("%s line %d: webhooks: an entry without url:", f.path, n.Line)
	}
	return t, nil
}

func (f *fileSettings) headerMap(n *yaml.Node) (map[string]string, error) {
	m := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i+1].Kind != yaml.ScalarNode {
			return nil, usagef("%s line %d: webhooks headers: want name: value", f.path, n.Content[i+1].Line)
		}
		m[n.Content[i].Value] = n.Content[i+1].Value
	}
	return m, nil
}

// pipelineEvents turns what the pipeline does into webhook events:
// recovered once a session streams again after transient failures, the
// slot's wal_status as each check reads it (notify sends an event when it
// becomes unreserved or lost), and the resyncs of --on-slot-lost resync.
// Its methods only count and queue.
type pipelineEvents struct {
	apply.NopObserver
	n        *notify.Notifier
	mu       sync.Mutex
	failures int    // transient failures since the last session that streamed
	lastErr  string // the last of them
}

func (e *pipelineEvents) SessionEnded(s apply.SessionEnd) {
	if !s.Retry || s.Err == nil || apply.Replays(s.Err) || source.LostSlot(s.Err) {
		// A replay change by change (to name the change a set-based
		// statement failed on), or one that commits transactions alone
		// (to stop right before the one the target refuses), is no
		// failure to recover from; a lost slot that a resync repairs has
		// events of its own.
		return
	}
	e.mu.Lock()
	e.failures++
	e.lastErr = strings.ReplaceAll(s.Err.Error(), "\n", " ")
	e.mu.Unlock()
}

func (e *pipelineEvents) SessionStarted(checkpoint.Row, source.LSN) {
	e.mu.Lock()
	failures, lastErr := e.failures, e.lastErr
	e.failures, e.lastErr = 0, ""
	e.mu.Unlock()
	if failures > 0 {
		e.n.Recovered(failures, lastErr)
	}
}

func (e *pipelineEvents) SlotChecked(st source.SlotState, _ error) {
	if st.Exists && st.WALStatus != "" {
		e.n.ObserveSlot(st.Slot, st.WALStatus)
	}
}

func (e *pipelineEvents) ResyncStarted(lost error) {
	e.n.ResyncStarted(strings.ReplaceAll(lost.Error(), "\n", " "))
}

func (e *pipelineEvents) DDLRejected(r apply.RejectedDDL) {
	e.n.DDLRejected(r.Commit.String(), r.Xid, r.Reason)
}

func (e *pipelineEvents) ResyncFinished(err error, took time.Duration) {
	e.n.ResyncFinished(err, took)
}

// lagEvery is how often the lag is compared with --alert-lag.
const lagEvery = 5 * time.Second

// watchLag compares the pipeline's lag with --alert-lag every lagEvery
// (notify sends lag_high and lag_ok as it crosses) until stopped.
func watchLag(ctx context.Context, st *service.State, n *notify.Notifier) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(lagEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				n.ObserveLag(time.Duration(st.Snapshot().LagSeconds * float64(time.Second)))
			}
		}
	}()
	return func() { cancel(); <-done }
}
