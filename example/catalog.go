package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/worksteal/worksteal/exphash"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

const (
	catalogSize = 1000
	itemTTL     = 10 * time.Second
	loadDelay   = 5 * time.Millisecond // the catalog's source of truth is slow
	popularKey  = "example:popular"    // item id -> reads
	popularTop  = 8                    // the items refresh-popular keeps warm
)

var errNoSuchItem = errors.New("no such item")

// app is the shop, whatever the stack that serves it: the catalog read
// through a Redis cache, the orders, each a chain of tasks on a queue
// (reserve → charge → confirm), and the customers' sessions.
type app struct {
	rdb      redis.UniversalClient
	rec      *recruiter.Recruiter
	logger   *slog.Logger
	orders   *queue.Queue
	mux      *tasks.Mux    // runs the orders' steps: in stolen time, or as the worker of -role=worker
	client   *tasks.Client // enqueues orders and reads their chains
	meters   metric.MeterProvider
	tracers  trace.TracerProvider
	sessions *exphash.Hash
	role     string       // -role: what the summary shows
	orderSeq atomic.Int64 // numbers the orders of this process
	count    counters
}

// counters are what the summary line shows of this process's traffic.
type counters struct {
	http, echo, grpc atomic.Uint64 // requests handled, by stack
	fast             atomic.Uint64 // of them, fast exits
	placed           atomic.Uint64 // orders placed
	sent             atomic.Uint64 // confirmations sent (the orders' last step) by a.mux
	workerSent       atomic.Uint64 // of -role=both: by its worker's Mux
	failed           atomic.Uint64 // the traffic generator's failed requests
}

// newApp makes the shop; meters count its tasks by type, tracers trace
// each order's enqueue and its steps' runs.
func newApp(rdb redis.UniversalClient, rec *recruiter.Recruiter, logger *slog.Logger, meters metric.MeterProvider, tracers trace.TracerProvider) (*app, error) {
	orders, err := queue.New(rdb, ordersQueue, ordersConfig)
	if err != nil {
		return nil, err
	}
	client, err := tasks.NewClient(orders, tasks.WithTracerProvider(tracers))
	if err != nil {
		return nil, err
	}
	sessions, err := exphash.New(rdb, sessionsKey)
	if err != nil {
		return nil, err
	}
	a := &app{rdb: rdb, rec: rec, logger: logger, orders: orders, client: client, sessions: sessions,
		meters: meters, tracers: tracers}
	if a.mux, err = a.newMux(&a.count.sent); err != nil {
		return nil, err
	}
	return a, nil
}

// item is a catalog entry as every stack returns it.
type item struct {
	ID         int    `json:"id"`
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	Cached     bool   `json:"cached"`
}

func itemKey(id int) string { return "example:item:" + strconv.Itoa(id) }

// getItem reads an item through the cache. A hit is a fast exit: if the
// stack's middleware drew this request, it lends a slice of its time once
// the response is done.
func (a *app) getItem(ctx context.Context, id int) (item, error) {
	if id < 0 || id >= catalogSize {
		return item{}, fmt.Errorf("%w: %d", errNoSuchItem, id)
	}
	pipe := a.rdb.Pipeline()
	cached := pipe.Get(ctx, itemKey(id))
	pipe.ZIncrBy(ctx, popularKey, 1, strconv.Itoa(id))
	_, _ = pipe.Exec(ctx) // each command's error is read from the command itself
	var it item
	if body, err := cached.Bytes(); err == nil && json.Unmarshal(body, &it) == nil {
		a.fastExit(ctx)
		it.Cached = true
		return it, nil
	}
	// A miss, or Redis failing: serve from the source either way.
	it, err := loadItem(ctx, id)
	if err != nil {
		return item{}, err
	}
	if body, err := json.Marshal(it); err == nil {
		a.rdb.Set(ctx, itemKey(id), body, itemTTL) // best effort: a failed fill is a later miss
	}
	return it, nil
}

// fastExit marks the request a fast exit and counts it.
func (a *app) fastExit(ctx context.Context) {
	a.count.fast.Add(1)
	recruiter.MarkFastExit(ctx)
}

// loadItem stands in for the catalog's database.
func loadItem(ctx context.Context, id int) (item, error) {
	select {
	case <-time.After(loadDelay):
		return item{ID: id, Name: fmt.Sprintf("item %d", id), PriceCents: priceCents(id)}, nil
	case <-ctx.Done():
		return item{}, ctx.Err()
	}
}

// priceCents is an item's price.
func priceCents(id int) int64 { return int64(100 + id*37%9900) }

// refreshPopular reloads the most read items before their cache entries
// expire, so that they never miss; popularTop bounds the slice. Like any
// job, it stops before its budget ends (a busy process is slower): the
// next run refreshes the rest.
func (a *app) refreshPopular(ctx context.Context) (recruiter.Report, error) {
	ids, err := a.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: popularKey, Start: 0, Stop: popularTop - 1, Rev: true}).Result()
	if err != nil {
		return recruiter.Report{}, fmt.Errorf("popular items: %w", err)
	}
	refreshed := 0
	for _, member := range ids {
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < 4*loadDelay {
			return recruiter.Report{Items: refreshed}, nil
		}
		id, err := strconv.Atoi(member)
		if err != nil {
			continue
		}
		it, err := loadItem(ctx, id)
		if err == nil {
			body, _ := json.Marshal(it)
			err = a.rdb.Set(ctx, itemKey(id), body, itemTTL).Err()
		}
		if err != nil {
			return recruiter.Report{Items: refreshed}, fmt.Errorf("refresh item %d: %w", id, err)
		}
		refreshed++
	}
	return recruiter.Report{Items: refreshed}, nil
}
