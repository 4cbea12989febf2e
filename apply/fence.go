package apply

import (
	"context"
	"log/slog"
	"time"
)

// AwaitEnded is the polling half of a writer's fence: before a new session
// reads the checkpoint, the sessions the writer gave up (one may still
// commit a round trip it was sent) must be gone. end asks the target to
// end those still running and says how many there were; AwaitEnded calls
// it every 100 ms until none is left, logging once, with which, that it
// waits. The caller bounds it with a deadline.
func AwaitEnded(ctx context.Context, log *slog.Logger, which slog.Attr, end func(context.Context) (running int, err error)) error {
	for polls := 0; ; polls++ {
		running, err := end(ctx)
		if err != nil || running == 0 {
			return err
		}
		if polls == 0 {
			log.Info("ending the previous target session, which may still hold a transaction", which)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
