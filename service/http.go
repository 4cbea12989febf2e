package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/decant/decant/apply/migrate"
)

// Probes are the bounds the health endpoints judge by.
type Probes struct {
	// MaxLag: /readyz answers 503 once lag_seconds reaches it.
	MaxLag time.Duration
	// Stall: /healthz answers 503 when a streaming session's apply loop
	// has not turned for this long. A target round trip stops the loop
	// for as long as it takes, up to --target-timeout, after which decant
	// gives the connection up itself: twice that is a loop that is stuck.
	Stall time.Duration
}

// Handler serves /metrics, /healthz, /readyz and /status from st.
func Handler(st *State, reg *Registry, p Probes) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg.Gatherer(), promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		answer(w, Healthy(st.Snapshot(), p, st.now()))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		answer(w, Ready(st.Snapshot(), p))
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(Status(st.Snapshot())) // a client gone is nobody's error
	})
	return mux
}

// answer writes 200 "ok" for a nil verdict, else 503 with its line.
func answer(w http.ResponseWriter, verdict error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if verdict != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, verdict.Error())
		return
	}
	fmt.Fprintln(w, "ok")
}

// Healthy is /healthz's verdict: nil while the process's loops turn.
// Between sessions (connecting, waiting to retry, copying) the pipeline's
// own loop only waits on bounded timers and connection attempts, so the
// process counts as alive; readiness tells that it is not streaming.
func Healthy(v Snapshot, p Probes, now time.Time) error {
	if !v.Streaming || p.Stall <= 0 || v.LastBeat.IsZero() {
		return nil
	}
	if quiet := now.Sub(v.LastBeat); quiet > p.Stall {
		return fmt.Errorf("the apply loop has not turned for %s (more than %s)", quiet.Round(time.Second), p.Stall)
	}
	return nil
}

// Ready is /readyz's verdict: nil when a session streams and applies and
// lag_seconds is under MaxLag.
func Ready(v Snapshot, p Probes) error {
	switch {
	case !v.Streaming && v.Copying:
		return errors.New("not streaming: the initial copy is running")
	case !v.Streaming && v.LastError != "":
		return fmt.Errorf("not streaming: the last session ended with a %s error: %s", v.LastClass, v.LastError)
	case !v.Streaming:
		return errors.New("not streaming: connecting to source and target")
	case p.MaxLag > 0 && v.LagSeconds >= p.MaxLag.Seconds():
		return fmt.Errorf("lag %.1fs is at or over --ready-max-lag %s", v.LagSeconds, p.MaxLag)
	}
	return nil
}

// Status is the running pipeline's state in decant status --json's shape.
// The slot fields are those of the last slot check while streaming;
// active means this process streams from it.
func Status(v Snapshot) migrate.Status {
	st := migrate.Status{Pipeline: v.Pipeline, LagBytes: v.LagBytes, LagSeconds: v.LagSeconds}
	if v.SourceEnd != 0 {
		st.SourceLSN = v.SourceEnd.String()
	}
	if v.Slot.Slot != "" {
		st.Slot = migrate.SlotStatus{Exists: v.Slot.Exists, Active: v.Streaming, Retained: retained(v.Slot), WALStatus: v.Slot.WALStatus,
			ConfirmedCSN: v.Slot.ConfirmedCSN}
		if v.Slot.Exists {
			st.Slot.Confirmed, st.Slot.Restart = v.Slot.Confirmed.String(), v.Slot.Restart.String()
		}
	}
	if v.HasCP {
		cp := v.Checkpoint
		st.Checkpoint = migrate.CheckpointStatus{Exists: true, CommitLSN: cp.Commit.String(), EndLSN: cp.End.String(), CommitCSN: cp.CSN, Xid: cp.Xid}
		if !cp.CommitTime.IsZero() {
			st.Checkpoint.CommitTime = &cp.CommitTime
		}
		if !cp.AppliedTime.IsZero() {
			st.Checkpoint.AppliedTime = &cp.AppliedTime
		}
	}
	return st
}

// Server is the HTTP endpoint, serving from Listen until Close.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// timeouts bound what one client may hold of the endpoint: the request's
// headers, the whole request, the answer, and an idle keep-alive
// connection. Without them a client that sends slowly, reads slowly or
// never closes keeps a connection (and its goroutine) for ever.
type timeouts struct {
	readHeader, read, write, idle time.Duration
}

// serveTimeouts are the endpoint's: a scrape of /metrics answers in well
// under the write bound.
func serveTimeouts() timeouts {
	return timeouts{readHeader: 10 * time.Second, read: 30 * time.Second, write: 30 * time.Second, idle: 2 * time.Minute}
}

// Listen binds addr (HOST:PORT) and serves h there in the background.
func Listen(addr string, h http.Handler, log *slog.Logger) (*Server, error) {
	return listen(addr, h, log, serveTimeouts())
}

func listen(addr string, h http.Handler, log *slog.Logger, to timeouts) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http-addr %s: %w", addr, err)
	}
	s := &Server{ln: ln, done: make(chan struct{}),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: to.readHeader, ReadTimeout: to.read, WriteTimeout: to.write, IdleTimeout: to.idle,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the HTTP endpoint stopped", "addr", addr, "error", err.Error())
		}
	}()
	log.Info("serving metrics and health", "addr", ln.Addr().String())
	return s, nil
}

// Addr is the address bound (with the port the kernel chose for :0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops serving, letting requests in flight finish for a moment
// (also when ctx has ended: it is the run's), and waits for the server
// to end.
func (s *Server) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
