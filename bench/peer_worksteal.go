package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/worksteal/worksteal/jobs"
	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

var peerTask = tasks.Define[peerArgs, struct{}]("peer")

// wsPeer is worksteal: typed tasks on a queue of the run's redis-server
// (database 0), worked by drain loops or by README's wiring.
type wsPeer struct {
	rdb     *redis.Client
	callRDB *redis.Client // Call's blocking reads hold a connection each
	q       *queue.Queue
	c, cc   *tasks.Client
	cfg     wsConfig
}

// wsConfig sets what varies between worksteal's rows.
type wsConfig struct {
	// fastExits is the fast exits per second that reach the process under
	// README's wiring (the latency rows); 0: none, the pace timer alone.
	fastExits float64
}

func newWSPeer(addr string, cfg wsConfig) (*wsPeer, error) {
	p := &wsPeer{cfg: cfg,
		rdb:     redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 64}),
		callRDB: redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 1024}),
	}
	var err error
	if p.q, err = queue.New(p.rdb, "peers", queue.Config{}); err != nil {
		return nil, err
	}
	cq, err := queue.New(p.callRDB, "peers", queue.Config{})
	if err != nil {
		return nil, err
	}
	if p.c, err = tasks.NewClient(p.q); err != nil {
		return nil, err
	}
	if p.cc, err = tasks.NewClient(cq); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *wsPeer) name() string { return "worksteal" }

func (p *wsPeer) close() { _ = p.rdb.Close(); _ = p.callRDB.Close() }

func (p *wsPeer) reset(ctx context.Context) error { return p.rdb.FlushDB(ctx).Err() }

func (p *wsPeer) enqueue(ctx context.Context, a peerArgs) error {
	_, err := peerTask.Enqueue(ctx, p.c, a)
	return err
}

func (p *wsPeer) enqueueBatch(ctx context.Context, as []peerArgs) error {
	for len(as) > 0 {
		n := min(len(as), queue.BatchMax)
		if _, err := peerTask.EnqueueMany(ctx, p.c, as[:n]); err != nil {
			return err
		}
		as = as[n:]
	}
	return nil
}

func (p *wsPeer) call(ctx context.Context, a peerArgs) error {
	_, err := peerTask.Call(ctx, p.cc, a)
	return err
}

func (p *wsPeer) waiting(ctx context.Context) (int64, error) {
	d, err := p.q.Depth(ctx)
	return d.Pending, err
}

func (p *wsPeer) left(ctx context.Context) (int64, error) {
	d, err := p.q.Depth(ctx)
	return d.Pending + d.Leased + d.Delayed + d.Dead, err
}

// start works the queue: with r.defaults as README wires it (a recruiter,
// the job at Every 1s, net/http middleware and fast exits at
// p.cfg.fastExits per second); otherwise as a dedicated worker would: one
// loop running the job's slices back to back (the recruiter's budget,
// 50 ms), each with r.workers handlers at once (DrainConfig.Concurrency),
// resting idlePoll after a slice that found nothing.
func (p *wsPeer) start(ctx context.Context, r peerRun, h peerHandler) (stop func() error, err error) {
	mux := tasks.NewMux()
	if err := peerTask.Handle(mux, func(ctx context.Context, a peerArgs) (struct{}, error) {
		h(ctx, a)
		return struct{}{}, nil
	}); err != nil {
		return nil, err
	}
	if r.defaults {
		return p.startREADME(ctx, mux)
	}
	job, err := mux.Job(p.q, jobs.DrainConfig{Concurrency: r.workers})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		var first error
		for ctx.Err() == nil {
			sctx, end := context.WithTimeout(ctx, sliceBudget)
			rep, err := job.Run(sctx)
			end()
			if err != nil && ctx.Err() == nil && first == nil {
				first = err
			}
			if rep.Items == 0 && !rep.More {
				_ = sleepCtx(ctx, idlePoll)
			}
		}
		done <- first
	}()
	return func() error {
		cancel()
		return <-done
	}, nil
}

// idlePoll is how long a drain loop rests after a slice that found nothing.
const idlePoll = 5 * time.Millisecond

// startREADME is the wiring users get: recruiter.New with its defaults,
// the job registered with Every alone, stealhttp's middleware on a
// net/http server, and fast exits from an open-loop load on it.
func (p *wsPeer) startREADME(ctx context.Context, mux *tasks.Mux) (stop func() error, err error) {
	rec, err := recruiter.New(p.rdb, recruiter.Config{})
	if err != nil {
		return nil, err
	}
	job, err := mux.Job(p.q, jobs.DrainConfig{})
	if err != nil {
		return nil, err
	}
	if err := rec.Register(job, recruiter.JobConfig{Every: time.Second}); err != nil {
		return nil, err
	}
	hm := http.NewServeMux()
	hm.HandleFunc("GET /fast", func(rw http.ResponseWriter, r *http.Request) {
		recruiter.MarkFastExit(r.Context())
		_, _ = rw.Write([]byte("ok\n"))
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: stealhttp.Middleware(rec)(hm), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	lctx, cancel := context.WithCancel(ctx)
	g := newLoadGen()
	wait := func() loadResult { return loadResult{} }
	if p.cfg.fastExits > 0 {
		wait = g.background(lctx, []string{l.Addr().String()}, p.cfg.fastExits)
	}
	return func() error {
		cancel()
		wait()
		g.close()
		sctx, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		return errors.Join(srv.Shutdown(sctx), rec.Shutdown(sctx))
	}, nil
}
