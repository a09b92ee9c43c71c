package dashboard

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/worksteal/worksteal/queue"
)

// QueueSource is a queue whose depth a [WithQueues] table shows;
// *queue.Queue is one.
type QueueSource interface {
	Name() string
	Depth(context.Context) (queue.Depth, error)
}

// WithQueues adds a table of queues to the page, and their depths to the
// [Document]: for each, its items by state, how long the oldest pending
// item has waited, and its dead letters. Depths are read from Redis (one
// script call per queue, O(log n)) when the page or the JSON is asked
// for, at most once per 2 s (the page's refresh) whatever the number of
// viewers, each read bounded by 1 s; a page nobody opens costs Redis
// nothing. Given more than once, the queues follow one another.
func WithQueues(qs ...QueueSource) Option {
	return optionFunc(func(c *config) { c.queues = append(c.queues, qs...) })
}

const (
	// queueFresh is how long a reading of the queues' depths serves
	// requests: the page refreshes every 2 s.
	queueFresh = 2 * time.Second
	// queueTimeout bounds one read of a queue's depth.
	queueTimeout = time.Second
)

// DocumentQueue is one queue's depth, as read at ReadAt; see
// [queue.Depth].
type DocumentQueue struct {
	Name    string    `json:"name"`
	ReadAt  time.Time `json:"read_at"`
	Error   string    `json:"error,omitempty"` // the read failed: the counts are 0
	Pending int64     `json:"pending"`         // waiting to be claimed, Parked included
	Leased  int64     `json:"leased"`
	Expired int64     `json:"expired"` // of Leased: past their deadline
	Delayed int64     `json:"delayed"`
	Due     int64     `json:"due"` // of Delayed: their time has come
	Dead    int64     `json:"dead"`
	Parked  int64     `json:"parked"` // of Pending: task types at their limit
	// OldestPendingMS is how long the item next in line has waited; 0
	// when nothing is pending.
	OldestPendingMS float64 `json:"oldest_pending_ms"`
}

// queueCache holds the last reading of the queues; mu is held through a
// read, so that concurrent requests share one.
type queueCache struct {
	mu   sync.Mutex
	at   time.Time
	rows []DocumentQueue
}

// queueRows returns the queues' depths, read now unless the last reading
// is fresh.
func (d *Dashboard) queueRows(now time.Time) []DocumentQueue {
	rows := []DocumentQueue{}
	if len(d.cfg.queues) == 0 {
		return rows
	}
	c := &d.queueCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && now.Sub(c.at) < queueFresh && now.Sub(c.at) >= 0 {
		return append(rows, c.rows...)
	}
	rows = make([]DocumentQueue, len(d.cfg.queues))
	var wg sync.WaitGroup
	for i, q := range d.cfg.queues {
		wg.Go(func() { rows[i] = readQueue(d.ctx, q, now) })
	}
	wg.Wait()
	c.at, c.rows = now, rows
	return append([]DocumentQueue(nil), rows...)
}

// readQueue reads one queue's depth; an error, a panic or no answer in
// queueTimeout is the row's Error.
func readQueue(ctx context.Context, q QueueSource, now time.Time) (row DocumentQueue) {
	row = DocumentQueue{ReadAt: now.UTC()}
	defer func() {
		if v := recover(); v != nil {
			row.Error = fmt.Sprintf("dashboard: the queue source panicked: %v", v)
		}
	}()
	row.Name = q.Name()
	ctx, cancel := context.WithTimeout(ctx, queueTimeout)
	defer cancel()
	dep, err := q.Depth(ctx)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	row.Pending, row.Leased, row.Expired, row.Delayed, row.Due, row.Dead, row.Parked =
		dep.Pending, dep.Leased, dep.Expired, dep.Delayed, dep.Due, dep.Dead, dep.Parked
	row.OldestPendingMS = ms(dep.OldestPending)
	return row
}

// queueView is one row of the page's queue table.
type queueView struct {
	Name, Error                                    string
	Pending, Leased, Delayed, Dead, Oldest, Parked string
	Expired, Due                                   string // "" when 0
	Dead0                                          bool
}

func queueViews(rows []DocumentQueue) []queueView {
	views := make([]queueView, 0, len(rows))
	for _, r := range rows {
		v := queueView{Name: r.Name, Error: r.Error, Dead0: r.Dead == 0,
			Pending: fmtCount(uint64(max(r.Pending, 0))), Leased: fmtCount(uint64(max(r.Leased, 0))),
			Delayed: fmtCount(uint64(max(r.Delayed, 0))), Dead: fmtCount(uint64(max(r.Dead, 0))),
			Oldest: fmtMS(r.OldestPendingMS)}
		if r.Expired > 0 {
			v.Expired = fmtCount(uint64(r.Expired)) + " expired"
		}
		if r.Due > 0 {
			v.Due = fmtCount(uint64(r.Due)) + " due"
		}
		if r.Parked > 0 {
			v.Parked = fmtCount(uint64(r.Parked)) + " parked"
		}
		views = append(views, v)
	}
	return views
}
