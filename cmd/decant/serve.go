package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/notify"
	"github.com/decant/decant/service"
	"github.com/decant/decant/source"
)

// serviceOptions are run's and migrate's flags for running as a service.
type serviceOptions struct {
	addr   string        // --http-addr
	maxLag time.Duration // --ready-max-lag
}

func addServiceFlags(cmd *cobra.Command, o *serviceOptions) {
	fs := cmd.Flags()
	fs.StringVar(&o.addr, "http-addr", "", "serve /metrics (Prometheus), /healthz, /readyz and /status on this HOST:PORT (off when empty)")
	fs.DurationVar(&o.maxLag, "ready-max-lag", time.Minute, "/readyz answers 503 while the lag in seconds is at or over this")
}

// observing is what a pipeline reports to while it runs: its state, the
// HTTP endpoint when --http-addr asks for one, the progress line.
type observing struct {
	state        *service.State
	spill        *source.SpillUsage
	srv          *service.Server   // nil without --http-addr
	registry     *service.Registry // what srv serves
	stopProgress func()
	notifier     *notify.Notifier // nil without webhooks
	stopLag      func()
}

// startObserving keeps the pipeline's state and serves it on --http-addr,
// from before anything streams (a migrate's copy included).
func startObserving(ctx context.Context, c config, o serviceOptions, log *slog.Logger) (*observing, error) {
	if o.maxLag <= 0 {
		return nil, usagef("invalid --ready-max-lag %s: give a positive duration, like 1m", o.maxLag)
	}
	spill := &source.SpillUsage{}
	ob := &observing{state: service.NewState(c.Pipeline, spill), spill: spill, stopProgress: func() {}, stopLag: func() {}}
	ob.state.WatchLinks(source.LinksFrom(ctx))
	if o.addr == "" {
		return ob, nil
	}
	probes := service.Probes{MaxLag: o.maxLag, Stall: stallBound(c.targetTimeout)}
	ob.registry = service.NewRegistry(ob.state)
	srv, err := service.Listen(o.addr, service.Handler(ob.state, ob.registry, probes), log)
	if err != nil {
		return nil, usageError{err}
	}
	ob.srv = srv
	return ob, nil
}

// webhooks sends the pipeline's events to n, and serves n's counts as
// the decant_webhook_* metrics.
func (o *observing) webhooks(n *notify.Notifier) {
	o.notifier = n
	if o.registry == nil {
		return
	}
	// Registered once per process on a registry of its own: it cannot
	// collide.
	_ = o.registry.RegisterWebhooks(func() service.WebhookStats {
		s := n.Stats()
		return service.WebhookStats{Delivered: s.Delivered, Dropped: s.Dropped, Failed: s.Failed, QueueLength: s.QueueLength}
	})
}

// stallBound is how long a streaming apply loop may go without turning
// before /healthz calls it stuck: twice the longest target round trip
// decant waits for (--target-timeout; its default when that is off).
func stallBound(targetTimeout time.Duration) time.Duration {
	if targetTimeout <= 0 {
		targetTimeout = defaultTargetTimeout
	}
	return 2 * max(targetTimeout, 2*apply.BeatInterval)
}

// observer is what the pipeline reports to: the state, and the events
// for the webhooks when there are any.
func (o *observing) observer() apply.Observer {
	if o.notifier == nil {
		return o.state
	}
	return apply.Observers{o.state, &pipelineEvents{n: o.notifier}}
}

// streaming starts the progress line and the lag alerts, once the
// pipeline streams.
func (o *observing) streaming(ctx context.Context, log *slog.Logger) {
	o.stopProgress = service.StartProgress(ctx, o.state, log, service.ProgressInterval)
	if o.notifier != nil {
		o.stopLag = watchLag(ctx, o.state, o.notifier)
	}
}

// stop logs the last progress line and stops the endpoint.
func (o *observing) stop(ctx context.Context, log *slog.Logger) {
	o.stopLag()
	o.stopProgress()
	if o.srv == nil {
		return
	}
	if err := o.srv.Close(ctx); err != nil {
		log.Warn("the HTTP endpoint did not stop cleanly", "error", err.Error())
	}
}
