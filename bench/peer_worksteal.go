package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync/atomic"
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
// (database 0), worked by Mux.Serve or by README's wiring.
type wsPeer struct {
	rdb     *redis.Client
	callRDB *redis.Client // Call's blocking reads hold a connection each
	q       *queue.Queue
	c, cc   *tasks.Client
	cfg     wsConfig
	addr    string
}

// wsConfig sets what varies between worksteal's rows.
type wsConfig struct {
	// fastExits is the fast exits per second that reach the process under
	// README's wiring (the latency rows); 0: none, the pace timer alone.
	fastExits float64
	// remote: the latency rows' tasks come from another process (this
	// program with -role enqueuer), whose enqueues ring no bell here.
	remote bool
}

func newWSPeer(addr string, cfg wsConfig) (*wsPeer, error) {
	p := &wsPeer{cfg: cfg, addr: addr,
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
// p.cfg.fastExits per second); otherwise as a dedicated worker, with
// Mux.Serve and r.workers handlers at once.
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
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mux.Serve(ctx, p.q, tasks.WorkerConfig{Concurrency: r.workers}) }()
	return func() error {
		cancel()
		return <-done
	}, nil
}

// idlePoll is River's FetchPollInterval in the processing runs: Mux.Serve
// looks again this soon after a slice that found nothing (then less
// often, up to 100 ms, while the queue stays empty).
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

// enqueueFromChild has another process enqueue at rate for d (this
// program with -role enqueuer), and returns how many it enqueued and how
// many enqueues failed.
func (p *wsPeer) enqueueFromChild(ctx context.Context, rate float64, d time.Duration) (n, failed int64, err error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(self, "-role", "enqueuer", "-redis", p.addr, "-enqueue-rate", fmt.Sprint(rate), "-enqueue-for", d.String())
	var out bytes.Buffer
	done, err := startChild(cmd, &out)
	if err != nil {
		return 0, 0, err
	}
	select {
	case <-done:
	case <-ctx.Done():
		stopChild(cmd, time.Second)
		return 0, 0, ctx.Err()
	}
	if _, err := fmt.Sscanf(out.String(), "enqueued %d failed %d", &n, &failed); err != nil {
		return 0, 0, fmt.Errorf("enqueuer said %q: %w", out.String(), err)
	}
	return n, failed, nil
}

// runEnqueuer is -role enqueuer: peer tasks at f.enqueueRate per second
// for f.enqueueFor, numbered from 0, then a line with the counts.
func runEnqueuer(f serviceFlags) error {
	p, err := newWSPeer(f.redis, wsConfig{})
	if err != nil {
		return err
	}
	defer p.close()
	ctx := context.Background()
	var failed atomic.Int64
	n := openLoop(ctx, f.enqueueRate, f.enqueueFor, func(i int64) {
		if err := p.enqueue(ctx, peerArgs{ID: i, At: time.Now().UnixNano()}); err != nil {
			failed.Add(1)
		}
	})
	fmt.Printf("enqueued %d failed %d\n", n, failed.Load())
	return nil
}
