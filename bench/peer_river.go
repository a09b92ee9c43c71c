package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// riverArgs is the peer task as River's job arguments.
type riverArgs struct {
	peerArgs
}

func (riverArgs) Kind() string { return "peer" }

type riverWorker struct {
	river.WorkerDefaults[riverArgs]
	h peerHandler
}

func (w *riverWorker) Work(ctx context.Context, j *river.Job[riverArgs]) error {
	w.h(ctx, j.Args.peerArgs)
	return nil
}

// riverPeer is River on the run's PostgreSQL, its queue "default".
type riverPeer struct {
	pool *pgxpool.Pool
	ins  *river.Client[pgx.Tx] // an insert-only client
	log  *slog.Logger
}

// riverDefaultWorkers is River's MaxWorkers at "defaults": River has no
// default, and this is its documentation's example.
const riverDefaultWorkers = 100

// riverFetchCooldown is River's least FetchCooldown, which the processing
// runs use: River fetches at most once per cooldown, so its default
// (100 ms) would bound 1 worker to 10 tasks/s.
const riverFetchCooldown = river.FetchCooldownMin

// riverFetchPoll is the processing runs' FetchPollInterval: as often as
// worksteal's drain loops look again after finding nothing (idlePoll), so
// that no worker waits a second (River's default) for a job already there.
const riverFetchPoll = idlePoll

func newRiverPeer(ctx context.Context, dsn string) (*riverPeer, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	// pgxpool's default, 4 on 2 cores, would queue 8 goroutines or workers.
	cfg.MaxConns = 32
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p := &riverPeer{pool: pool, log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return nil, err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, err
	}
	if p.ins, err = river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: p.log}); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *riverPeer) name() string { return "River" }

func (p *riverPeer) close() { p.pool.Close() }

func (p *riverPeer) reset(ctx context.Context) error {
	_, err := p.pool.Exec(ctx, "TRUNCATE river_job")
	return err
}

func (p *riverPeer) enqueue(ctx context.Context, a peerArgs) error {
	_, err := p.ins.Insert(ctx, riverArgs{a}, nil)
	return err
}

// enqueueBatch uses InsertManyFast (COPY FROM), River's fastest batch.
func (p *riverPeer) enqueueBatch(ctx context.Context, as []peerArgs) error {
	for len(as) > 0 {
		n := min(len(as), 1000)
		params := make([]river.InsertManyParams, n)
		for i, a := range as[:n] {
			params[i] = river.InsertManyParams{Args: riverArgs{a}}
		}
		if _, err := p.ins.InsertManyFast(ctx, params); err != nil {
			return err
		}
		as = as[n:]
	}
	return nil
}

// call: River has no call that waits for a job's result.
func (p *riverPeer) call(context.Context, peerArgs) error { return errUnsupported }

func (p *riverPeer) count(ctx context.Context, query string) (int64, error) {
	var n int64
	err := p.pool.QueryRow(ctx, query).Scan(&n)
	return n, err
}

func (p *riverPeer) waiting(ctx context.Context) (int64, error) {
	return p.count(ctx, "SELECT count(*) FROM river_job WHERE state = 'available'")
}

func (p *riverPeer) left(ctx context.Context) (int64, error) {
	return p.count(ctx, "SELECT count(*) FROM river_job WHERE state <> 'completed'")
}

// start runs a River client on the default queue with r.workers workers,
// its least fetch cooldown and a short poll, or at its defaults with
// riverDefaultWorkers.
func (p *riverPeer) start(ctx context.Context, r peerRun, h peerHandler) (stop func() error, err error) {
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &riverWorker{h: h}); err != nil {
		return nil, err
	}
	n, cooldown, poll := r.workers, riverFetchCooldown, riverFetchPoll
	if r.defaults {
		n, cooldown, poll = riverDefaultWorkers, 0, 0
	}
	c, err := river.NewClient(riverpgxv5.New(p.pool), &river.Config{
		FetchCooldown:     cooldown,
		FetchPollInterval: poll,
		Logger:            p.log,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: n}},
		Workers:           workers,
	})
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	return func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return c.Stop(sctx)
	}, nil
}
