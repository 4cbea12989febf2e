package notify

import (
	"context"
	"sync"
)

// queued is an event and its encoded body, the same bytes for every
// target and every attempt.
type queued struct {
	event Event
	body  []byte
}

// queue is one target's bounded FIFO. push never blocks: when the queue
// is full it drops the oldest event.
type queue struct {
	mu      sync.Mutex
	items   []queued
	max     int
	closed  bool
	wake    chan struct{} // one token: something to pop, or closed
	counts  *counters
	dropped uint64 // dropped since the queue last had room, for the log
}

func newQueue(max int, counts *counters) *queue {
	return &queue{max: max, wake: make(chan struct{}, 1), counts: counts}
}

// push adds q, dropping the oldest event when full. It reports the
// event dropped, if any, and whether this began a run of drops (the
// queue had room before), for one log line per run.
func (q *queue) push(item queued) (lost Event, dropped, first bool) {
	q.mu.Lock()
	if len(q.items) >= q.max {
		lost, dropped = q.items[0].event, true
		q.items[0] = queued{}
		q.items = q.items[1:]
		first = q.dropped == 0
		q.dropped++
		q.counts.dropped.Add(1)
	} else {
		q.dropped = 0
	}
	q.items = append(q.items, item)
	q.mu.Unlock()
	q.signal()
	return lost, dropped, first
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default: // a token is already there
	}
}

// pop waits for the oldest event. It reports false once the queue is
// closed and empty, or ctx ended.
func (q *queue) pop(ctx context.Context) (queued, bool) {
	for ctx.Err() == nil {
		q.mu.Lock()
		if len(q.items) > 0 {
			item := q.items[0]
			q.items[0] = queued{} // let the body be collected
			q.items = q.items[1:]
			q.mu.Unlock()
			return item, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return queued{}, false
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
		}
	}
	return queued{}, false
}

// close makes pop report false once the queue is empty.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

// discard empties the queue and returns how many events it held.
func (q *queue) discard() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.items)
	q.items = nil
	return n
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
