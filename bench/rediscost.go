package main

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/worksteal/worksteal/queue"
)

// redisRow is one fleet size at one request rate (experiment 2).
type redisRow struct {
	N              int
	Paced          bool    // the queue's jobs by Every alone (automatic pace), not fixed rates
	Rate           float64 // asked, requests/s across the fleet
	ReqPerSec      float64 // served
	CmdsPerSec     float64 // Redis commands (inner ones of scripts included), the fleet's
	RedisMsPerSec  float64 // Redis's own time for them, ms per second
	CmdsPer1kReq   float64
	RTPer1kReq     float64 // the fleet's round trips (script calls)
	LockRTPerProc  float64 // the recruiter's round trips per second per process
	ItemsPerSec    float64 // stolen items: drained + tidied + promoted
	CmdsPerItem    float64
	QueueRTPerItem float64
}

// producerRate is the enqueue rate of experiments 2 and 3, items/s.
const producerRate = 100

// producer enqueues rate items per second in batches every 100 ms.
type producer struct {
	q       *queue.Queue
	rate    int
	batches int64
	mu      sync.Mutex
}

func (p *producer) run(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	payloads := make([][]byte, max(p.rate/10, 1))
	for i := range payloads {
		payloads[i] = fmt.Appendf(nil, "%064d", i)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := p.q.EnqueueBatch(ctx, payloads); err == nil {
			p.mu.Lock()
			p.batches++
			p.mu.Unlock()
		}
	}
}

func (p *producer) count() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.batches
}

// batchCost measures what one of the producer's EnqueueBatch calls costs
// Redis (commands, usec), on a scratch queue, so that the fleet's share of
// INFO commandstats can be told from the producer's.
func batchCost(ctx context.Context, e *env, rate int) (cmdStat, error) {
	q, err := queue.New(e.rdb, "calibration", queue.Config{Prefix: "calib"})
	if err != nil {
		return cmdStat{}, err
	}
	payloads := make([][]byte, max(rate/10, 1))
	for i := range payloads {
		payloads[i] = fmt.Appendf(nil, "%064d", i)
	}
	if _, err := q.EnqueueBatch(ctx, payloads); err != nil { // loads the script
		return cmdStat{}, err
	}
	before, err := commandStats(ctx, e.rdb)
	if err != nil {
		return cmdStat{}, err
	}
	const n = 50
	for range n {
		if _, err := q.EnqueueBatch(ctx, payloads); err != nil {
			return cmdStat{}, err
		}
	}
	after, err := commandStats(ctx, e.rdb)
	if err != nil {
		return cmdStat{}, err
	}
	calls, usec := deltaStats(before, after).total()
	return cmdStat{Calls: calls / n, Usec: usec / n}, e.rdb.FlushAll(ctx).Err()
}

func redisPlan(quick bool) (ns []int, rates []float64, warmup, window time.Duration) {
	if quick {
		return []int{1, 2}, []float64{200, 1000}, 500 * time.Millisecond, 1500 * time.Millisecond
	}
	return []int{1, 2, 4}, []float64{200, 1000, 4000}, time.Second, 5 * time.Second
}

// runRedisCost is experiment 2: fleets of N services with the queue jobs,
// a producer at a fixed rate, and growing request rates; Redis commands
// from INFO commandstats deltas, round trips from each service's clients.
func runRedisCost(ctx context.Context, e *env, rep *report) error {
	ns, rates, warmup, window := redisPlan(e.opts.quick)
	perBatch, err := batchCost(ctx, e, producerRate)
	if err != nil {
		return fmt.Errorf("calibrate producer: %w", err)
	}
	rep.producerBatch = perBatch
	for _, paced := range []bool{false, true} {
		for _, n := range ns {
			if err := e.rdb.FlushAll(ctx).Err(); err != nil {
				return err
			}
			if err := redisCostFleet(ctx, e, rep, n, paced, rates, warmup, window, perBatch); err != nil {
				return err
			}
		}
	}
	return nil
}

func redisCostFleet(ctx context.Context, e *env, rep *report, n int, paced bool, rates []float64, warmup, window time.Duration, perBatch cmdStat) error {
	var procs []*proc
	defer func() { stopAll(procs) }()
	args := []string{"-mw", "queue", "-prefix", "rc"}
	if paced {
		args = append(args, "-paced")
	}
	for i := range n {
		p, err := e.startProc(ctx, "service", fmt.Sprintf("redis-n%d-%v-%d", n, paced, i), args...)
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	prdb, _ := newCountedClient(e.addr, 4)
	defer prdb.Close()
	q, err := queue.New(prdb, queueName, queue.Config{Prefix: "rc"})
	if err != nil {
		return err
	}
	pctx, stopProducer := context.WithCancel(ctx)
	defer stopProducer()
	prod := &producer{q: q, rate: producerRate}
	go prod.run(pctx)
	g := newLoadGen()
	defer g.close()
	for _, rate := range rates {
		lctx, stopLoad := context.WithCancel(ctx)
		wait := g.background(lctx, addrs(procs), rate)
		time.Sleep(warmup)
		f0, _, err := fetchFleet(ctx, procs)
		if err != nil {
			stopLoad()
			return err
		}
		s0, err := commandStats(ctx, e.rdb)
		b0 := prod.count()
		if err != nil {
			stopLoad()
			return err
		}
		select {
		case <-time.After(window):
		case <-ctx.Done():
		}
		s1, err1 := commandStats(ctx, e.rdb)
		b1 := prod.count()
		f1, _, err2 := fetchFleet(ctx, procs)
		stopLoad()
		wait()
		if err := cmp.Or(ctx.Err(), err1, err2); err != nil {
			return err
		}
		d, f := deltaStats(s0, s1), f1.minus(f0)
		calls, usec := d.total()
		calls -= (b1 - b0) * perBatch.Calls
		usec -= (b1 - b0) * perBatch.Usec
		sec := window.Seconds()
		row := redisRow{N: n, Paced: paced, Rate: rate, ReqPerSec: float64(f.Requests) / sec,
			CmdsPerSec: float64(calls) / sec, RedisMsPerSec: float64(usec) / 1000 / sec,
			LockRTPerProc: float64(f.LockRT) / sec / float64(n), ItemsPerSec: float64(f.Items) / sec}
		if f.Requests > 0 {
			row.CmdsPer1kReq = float64(calls) * 1000 / float64(f.Requests)
			row.RTPer1kReq = float64(f.LockRT+f.QueueRT) * 1000 / float64(f.Requests)
		}
		if f.Items > 0 {
			row.CmdsPerItem = float64(calls) / float64(f.Items)
			row.QueueRTPerItem = float64(f.QueueRT) / float64(f.Items)
		}
		logf("redis: N=%d paced=%v %v req/s: %.0f cmds/s, lock %.1f rt/s/proc, %.0f items/s", n, paced, rate, row.CmdsPerSec, row.LockRTPerProc, row.ItemsPerSec)
		rep.redis = append(rep.redis, row)
	}
	return nil
}
