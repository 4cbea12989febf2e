package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// The headers of every request.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderEvent          = "X-Decant-Event"
	HeaderTimestamp      = "X-Decant-Timestamp"
	HeaderSignature      = "X-Decant-Signature"
)

// target is one webhook's queue and worker.
type target struct {
	name    string // "webhook 2 (hooks.example.com)": never the URL's path, query or userinfo
	url     string
	headers map[string]string
	secret  []byte
	timeout time.Duration
	client  *retryablehttp.Client
	queue   *queue
	counts  *counters
	log     *slog.Logger
	done    chan struct{}
}

func newTarget(number int, t Target, cfg Config, counts *counters) *target {
	u, _ := url.Parse(t.URL) // Validate parsed it
	tg := &target{
		name:    fmt.Sprintf("webhook %d (%s)", number, u.Host),
		url:     t.URL,
		headers: t.Headers,
		secret:  []byte(cfg.Secret),
		timeout: cfg.EventTimeout,
		queue:   newQueue(cfg.QueueLength, counts),
		counts:  counts,
		done:    make(chan struct{}),
	}
	tg.log = cfg.Logger.With("webhook", tg.name)
	tg.client = tg.newClient(cfg)
	return tg
}

// newClient is the retrying client. Its own logger is off: it prints
// URLs, whose path or query may hold a token; the hooks log instead.
func (t *target) newClient(cfg Config) *retryablehttp.Client {
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.HTTPClient.Timeout = cfg.AttemptTimeout
	// A redirect is not followed: a 307/308 would send the signed body
	// and the target's own headers (tokens) to another host, and a 302
	// would turn the POST into a GET that then counts as delivered. The
	// 3xx itself comes back, and retryPolicy fails the event on it.
	c.HTTPClient.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.RetryMax = cfg.RetryMax
	c.RetryWaitMin, c.RetryWaitMax = cfg.RetryWaitMin, cfg.RetryWaitMax
	c.Backoff = jitteredBackoff
	c.CheckRetry = retryPolicy
	c.ErrorHandler = finalError
	c.PrepareRetry = t.sign
	c.RequestLogHook = func(_ retryablehttp.Logger, r *http.Request, retry int) {
		if retry > 0 {
			t.log.Debug("webhook retry", "id", r.Header.Get(HeaderIdempotencyKey), "attempt", retry+1)
		}
	}
	return c
}

// run delivers the queue in order until it is closed and empty, or ctx
// ends.
func (t *target) run(ctx context.Context) {
	defer close(t.done)
	for {
		q, ok := t.queue.pop(ctx)
		if !ok {
			return
		}
		t.deliver(ctx, q)
	}
}

// deliver sends one event until it is delivered, refused or out of time.
func (t *target) deliver(ctx context.Context, q queued) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	err := t.post(ctx, q.event, q.body)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("gave up after %s (the time one event may take): %w", t.timeout, cleanError(err))
	}
	if err == nil {
		t.counts.delivered.Add(1)
		return
	}
	t.counts.failed.Add(1)
	t.log.Warn("webhook event not delivered", "id", q.event.ID, "kind", q.event.Kind, "seq", q.event.Seq, "error", err)
}

func (t *target) post(ctx context.Context, e Event, body []byte) error {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, t.url, body)
	if err != nil {
		return cleanError(err)
	}
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "decant")
	req.Header.Set(HeaderIdempotencyKey, e.ID)
	req.Header.Set(HeaderEvent, string(e.Kind))
	if err := t.sign(req.Request); err != nil {
		return err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	resp.Body.Close()
	return nil
}

// sign sets the timestamp and signature headers, when there is a secret;
// retryablehttp calls it again before each retry, so that every attempt
// carries its own time.
func (t *target) sign(r *http.Request) error {
	if len(t.secret) == 0 {
		return nil
	}
	body, err := requestBody(r)
	if err != nil {
		return err
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	r.Header.Set(HeaderTimestamp, ts)
	r.Header.Set(HeaderSignature, Signature(t.secret, ts, body))
	return nil
}

// requestBody reads a request's body without using it up.
func requestBody(r *http.Request) ([]byte, error) {
	if r.GetBody == nil {
		return nil, nil
	}
	rc, err := r.GetBody()
	if err != nil {
		return nil, fmt.Errorf("webhook body: %w", err)
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// Signature is the X-Decant-Signature value of body sent at timestamp
// (unix seconds, as in X-Decant-Timestamp):
// "sha256=" + hex(HMAC-SHA256(secret, timestamp + "." + body)).
func Signature(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// retryPolicy retries network errors (as retryablehttp's default policy
// does: not TLS certificate or scheme errors), 408, 429 and 5xx but 501;
// any other answer is final: 2xx delivered, the rest refused, a 3xx
// (not followed) with where it pointed.
func retryPolicy(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, fmt.Errorf("gave up: %w", context.Cause(ctx))
	}
	if err != nil {
		retry, _ := retryablehttp.DefaultRetryPolicy(ctx, resp, err)
		return retry, nil
	}
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return false, nil
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests:
		return true, nil
	case code >= 500 && code != http.StatusNotImplemented:
		return true, nil
	case code >= 300 && code < 400:
		return false, fmt.Errorf("redirected with HTTP status %d to %s, not followed: give the webhook's final URL", code, redirectTarget(resp))
	}
	return false, fmt.Errorf("refused with HTTP status %d, not retried", code)
}

// redirectTarget is where a 3xx pointed, as scheme://host/path: never
// its userinfo, query or fragment, which may hold tokens.
func redirectTarget(resp *http.Response) string {
	u, err := resp.Location()
	if err != nil {
		return "no valid Location"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// jitteredBackoff doubles the wait from RetryWaitMin up to RetryWaitMax
// (retryablehttp's DefaultBackoff) and picks a random wait between half
// of that and all of it, so that many decants do not retry in step. A
// Retry-After the receiver sent on a 429 or 503 is kept as it is.
func jitteredBackoff(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
	d := retryablehttp.DefaultBackoff(minWait, maxWait, attempt, resp)
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && resp.Header.Get("Retry-After") != "" {
		return d // DefaultBackoff took the receiver's wait
	}
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// finalError is the error of an event that was not delivered, without
// the URL that net/http and retryablehttp put in theirs.
func finalError(resp *http.Response, err error, attempts int) (*http.Response, error) {
	if resp != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}
	if err == nil && resp != nil {
		err = fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	return nil, fmt.Errorf("%d attempt(s): %w", attempts, cleanError(err))
}

// cleanError drops the URL from a *url.Error: "Post \"https://...\":
// dial tcp: connection refused" becomes "dial tcp: connection refused".
func cleanError(err error) error {
	var ue *url.Error
	for errors.As(err, &ue) {
		err = ue.Err
	}
	if err == nil {
		return errors.New("no answer")
	}
	return err
}
