package service

import (
	"context"
	"log/slog"
	"time"
)

// ProgressInterval is how often a running pipeline logs its progress.
const ProgressInterval = 30 * time.Second

// StartProgress logs a progress line at info level every interval:
// transactions and row changes applied since the line before, the lag,
// the checkpoint's position and what the source was told is flushed.
// stop ends it and logs the last line (what was applied since the line
// before, up to the stop) when a session ever started, then returns once
// it has.
func StartProgress(ctx context.Context, st *State, log *slog.Logger, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		var last Snapshot
		for {
			select {
			case <-ctx.Done():
				if st.sessions.Load() > 0 { // a run that never connected has only its error to say
					progressLine(log, "progress at stop", st.Snapshot(), &last)
				}
				return
			case <-tick.C:
				progressLine(log, "progress", st.Snapshot(), &last)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// progressLine logs v against the line before, last, and makes v the
// new last. Nothing happened since, on a pipeline not streaming, is said
// as such rather than with zeroes that look like an idle source.
func progressLine(log *slog.Logger, msg string, v Snapshot, last *Snapshot) {
	attrs := []any{
		"txns", v.Txns - last.Txns, "rows", v.Changes - last.Changes,
		"lag_bytes", v.LagBytes, "lag_seconds", roundSeconds(v.LagSeconds),
		"position", v.Applied.String(), "flushed", v.Flushed.String(),
	}
	if !v.Streaming {
		attrs = append(attrs, "streaming", false)
	}
	log.Info(msg, attrs...)
	*last = v
}

func roundSeconds(s float64) float64 { return float64(int64(s*10)) / 10 }
