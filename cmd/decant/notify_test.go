package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/notify"
	"github.com/decant/decant/service"
	"github.com/decant/decant/source"
)

// webhookConfig settles run's flags from args and the environment and
// returns the notifier's configuration.
func webhookConfig(t *testing.T, args ...string) (notify.Config, error) {
	t.Helper()
	cmd, _, err := newRoot().Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(append(args, "--source", "postgres://u@h/db", "--target", "postgres://u@h/db")); err != nil {
		t.Fatal(err)
	}
	file, err := settle(cmd)
	if err != nil {
		return notify.Config{}, err
	}
	fs := cmd.Flags()
	var w webhookFlags
	w.urls, _ = fs.GetStringArray("webhook")
	w.secret, _ = fs.GetString("webhook-secret")
	w.secretFile, _ = fs.GetString("webhook-secret-file")
	w.alertLag, _ = fs.GetDuration("alert-lag")
	return w.notifyConfig(config{Pipeline: "shop", Webhooks: file.webhooks}, nil)
}

// The targets are the --webhook URLs (command line, else DECANT_WEBHOOK,
// else webhook: in the file), then the file's webhooks: entries with
// their headers.
func TestWebhookTargets(t *testing.T) {
	file := writeFile(t, "webhook:\n  - https://file.example/a\nwebhooks:\n  - url: https://hooks.example/b\n    headers:\n      Authorization: Bearer t0k\n  - url: http://other.example/c\n")
	t.Setenv("DECANT_WEBHOOK", "https://env.example/1,https://env.example/2")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("hush\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := webhookConfig(t, "--config", file, "--webhook-secret-file", secret, "--alert-lag", "90s")
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, tg := range cfg.Targets {
		urls = append(urls, tg.URL)
	}
	if got := strings.Join(urls, " "); got != "https://env.example/1 https://env.example/2 https://hooks.example/b http://other.example/c" {
		t.Errorf("targets %s", got)
	}
	if cfg.Targets[2].Headers["Authorization"] != "Bearer t0k" || cfg.Targets[3].Headers != nil {
		t.Errorf("headers %v %v", cfg.Targets[2].Headers, cfg.Targets[3].Headers)
	}
	if cfg.Secret != "hush" || cfg.AlertLag.String() != "1m30s" || cfg.Pipeline != "shop" {
		t.Errorf("secret %q, alert lag %s, pipeline %s", cfg.Secret, cfg.AlertLag, cfg.Pipeline)
	}
	cfg, err = webhookConfig(t, "--config", file, "--webhook", "https://flag.example/x")
	if err != nil || len(cfg.Targets) != 3 || cfg.Targets[0].URL != "https://flag.example/x" || cfg.AlertLag.String() != "5m0s" {
		t.Errorf("--webhook over the environment: %v %+v", err, cfg)
	}
}

// Webhook mistakes are usage errors that name the line or the webhook's
// number, and never quote a URL, which may hold a token.
func TestWebhookErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		file string
		want string
	}{
		{[]string{"--webhook", "ftp://hooks.example/t0k"}, "", "webhook 1: the URL is not an absolute http:// or https:// URL"},
		{nil, "webhooks:\n  - url: hooks.example/t0k\n", "webhook 1: the URL is not"},
		{[]string{"--webhook-secret", "a", "--webhook-secret-file", empty}, "", "--webhook-secret and --webhook-secret-file both give the secret"},
		{[]string{"--webhook-secret-file", empty}, "", "is empty: write the secret into it"},
		{nil, "webhooks: https://hooks.example/t0k\n", "line 1: webhooks: want a list of {url: ..., headers: {name: value}}"},
		{nil, "webhooks:\n  - https://hooks.example/t0k\n", "line 2: webhooks: want url: and optional headers:"},
		{nil, "webhooks:\n  - url: https://h/x\n    header: {a: b}\n", `line 3: unknown key "header" under webhooks (want url or headers)`},
		{nil, "webhooks:\n  - headers: {a: b}\n", "line 2: webhooks: an entry without url:"},
		{nil, "webhooks:\n  - url: https://h/x\n    headers: [a]\n", "line 3: webhooks headers: want url: URL and headers: {name: value}"},
		{nil, "webhooks:\n  - url: https://h/x\n    headers: {X-Decant-Event: b}\n", "header X-Decant-Event is set by decant"},
	} {
		args := c.args
		if c.file != "" {
			args = append(args, "--config", writeFile(t, c.file))
		}
		_, err := webhookConfig(t, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, new(usageError)) || strings.Contains(err.Error(), "t0k") {
			t.Errorf("%v %q: %v\nwant a usage error with %s", c.args, c.file, err, c.want)
		}
	}
}

// run that stops on an error sends one pipeline_stopped event with the
// error line, without the DSN's password, before it exits.
func TestRunSendsPipelineStopped(t *testing.T) {
	var mu sync.Mutex
	var events []notify.Event
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var e notify.Event
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("not an event: %s", body)
		}
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}))
	defer srv.Close()
	root := newRoot()
	root.SetArgs([]string{"run", "--pipeline", "shop", "--webhook", srv.URL, "--webhook-secret", "x",
		"--source", "postgres://u:s3cret@127.0.0.1:1/db?connect_timeout=1", "--target", "postgres://u:s3cret@127.0.0.1:1/db?connect_timeout=1"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.ExecuteContext(t.Context())
	if err == nil {
		t.Fatal("run against a closed port succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 {
		t.Fatalf("%d events, want 1: %+v", len(events), events)
	}
	e := events[0]
	if e.Kind != notify.PipelineStopped || e.Pipeline != "shop" || e.Seq != 1 || e.Message != notify.Sanitize(err.Error()) {
		t.Errorf("event %+v\nerror %v", e, err)
	}
	if strings.Contains(e.Message, "s3cret") {
		t.Errorf("the event shows the password: %s", e.Message)
	}
}

// The pipeline's own events: recovered after transient failures, once
// per recovery; the slot's wal_status as it changes; lag_high and lag_ok
// as the lag crosses --alert-lag.
func TestPipelineEvents(t *testing.T) {
	got := make(chan notify.Event, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e notify.Event
		if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
			t.Errorf("not an event: %v", err)
		}
		got <- e
	}))
	defer srv.Close()
	n, err := notify.New(t.Context(), notify.Config{Pipeline: "shop", Targets: []notify.Target{{URL: srv.URL}}, AlertLag: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	ob := &observing{state: service.NewState("shop", &source.SpillUsage{}), notifier: n}
	o := ob.observer()
	next := func(want notify.Kind) notify.Event {
		t.Helper()
		select {
		case e := <-got:
			if e.Kind != want {
				t.Fatalf("event %s (%s), want %s", e.Kind, e.Message, want)
			}
			return e
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event", want)
		}
		return notify.Event{}
	}

	o.SessionStarted(checkpoint.Row{}, 0) // the first session: nothing to recover from
	for range 2 {
		o.SessionEnded(apply.SessionEnd{Err: errors.New("target: connection refused"), Class: apply.ClassTransient, Retry: true})
	}
	o.SessionStarted(checkpoint.Row{}, 0)
	if e := next(notify.Recovered); !strings.Contains(e.Message, "2 reconnect") || !strings.Contains(e.Message, "connection refused") {
		t.Errorf("recovered: %q", e.Message)
	}
	o.SessionStarted(checkpoint.Row{}, 0) // no failure since: no event

	// --on-slot-lost resync: the lost slot ends a session, is resynced,
	// and streaming goes on: two events of their own, no recovered.
	lost := &source.SlotMissingError{Slot: "shop", Pipeline: "shop", Recorded: 1, Timeline: 2}
	o.SessionEnded(apply.SessionEnd{Err: lost, Class: apply.ClassNeedsPerson, Retry: true})
	o.ResyncStarted(lost)
	o.ResyncFinished(nil, 3*time.Second)
	o.SessionStarted(checkpoint.Row{}, 0)
	if e := next(notify.ResyncStarted); !strings.Contains(e.Message, "likely failed over") || !strings.Contains(e.Message, "--on-slot-lost resync") {
		t.Errorf("resync_started: %q", e.Message)
	}
	if e := next(notify.ResyncFinished); !strings.Contains(e.Message, "resync done in 3s") {
		t.Errorf("resync_finished: %q", e.Message)
	}
	o.ResyncFinished(errors.New("target: connection refused"), time.Second)
	if e := next(notify.ResyncFinished); !strings.Contains(e.Message, "resync failed after 1s: target: connection refused") {
		t.Errorf("resync_finished after a failure: %q", e.Message)
	}

	for _, status := range []string{"reserved", "unreserved", "unreserved", "lost"} {
		o.SlotChecked(source.SlotState{Slot: "shop", Exists: true, WALStatus: status}, nil)
	}
	next(notify.SlotUnreserved)
	next(notify.SlotLost)

	o.Received(&source.Txn{CommitTime: time.Now().Add(-2 * time.Minute)})
	n.ObserveLag(time.Duration(ob.state.Snapshot().LagSeconds * float64(time.Second)))
	next(notify.LagHigh)
	o.Committed(apply.Commit{Txns: 1, Checkpoint: checkpoint.Row{CommitTime: time.Now()}})
	n.ObserveLag(time.Duration(ob.state.Snapshot().LagSeconds * float64(time.Second)))
	next(notify.LagOK)
	select {
	case e := <-got:
		t.Errorf("an extra event %s: %s", e.Kind, e.Message)
	case <-time.After(200 * time.Millisecond):
	}
}
