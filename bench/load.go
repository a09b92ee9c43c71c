package main

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// histogram records latencies in nanoseconds in log-linear buckets, HDR
// style: each power of two is cut into 2^subBits linear buckets, so a
// bucket is at most 1/128 of its value wide and a quantile read at the
// bucket's middle is within 0.4 %. Recording is one atomic add.
type histogram struct {
	counts [64 << subBits]atomic.Int64
	n      atomic.Int64
	max    atomic.Int64
}

const subBits = 7

func bucketOf(v int64) int {
	if v < 1<<subBits {
		return int(max(v, 0))
	}
	shift := bits.Len64(uint64(v)) - 1 - subBits
	return (shift+1)<<subBits + int(v>>shift) - 1<<subBits
}

// bucketMid is the middle of bucket i, the value a quantile reports.
func bucketMid(i int) float64 {
	if i < 1<<subBits {
		return float64(i)
	}
	shift := i>>subBits - 1
	lo := int64(i&(1<<subBits-1)+1<<subBits) << shift
	return float64(lo) + float64(int64(1)<<shift)/2
}

func (h *histogram) record(d time.Duration) {
	v := int64(d)
	h.counts[bucketOf(v)].Add(1)
	h.n.Add(1)
	for m := h.max.Load(); v > m && !h.max.CompareAndSwap(m, v); m = h.max.Load() {
	}
}

// quantile returns the q-quantile (0 < q ≤ 1).
func (h *histogram) quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := int64(q*float64(n) + 0.5)
	rank = min(max(rank, 1), n)
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return time.Duration(bucketMid(i))
		}
	}
	return time.Duration(h.max.Load())
}

// loadResult is one open-loop run.
type loadResult struct {
	Rate       float64 // asked, requests/s
	Throughput float64 // answered OK per second of the measured window
	Sent, OK   int64
	Errors     int64
	P50, P99   time.Duration
	P999, Max  time.Duration
	hist       *histogram
}

// loadGen sends GET /fast at a fixed rate, whatever the answers' pace
// (open loop): request i is due at start + i/rate, and its latency is
// measured from when it was due, so a stall counts for every request it
// delays (no coordinated omission). Targets take turns.
type loadGen struct {
	client *http.Client
}

func newLoadGen() *loadGen {
	tr := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute, DisableCompression: true}
	return &loadGen{client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

func (g *loadGen) close() { g.client.CloseIdleConnections() }

// run sends rate requests per second for warmup+window across targets,
// recording only the requests due in the window.
func (g *loadGen) run(ctx context.Context, targets []string, rate float64, warmup, window time.Duration) (loadResult, error) {
	if len(targets) == 0 || rate <= 0 {
		return loadResult{}, fmt.Errorf("load: no targets or rate %v", rate)
	}
	urls := make([]string, len(targets))
	for i, t := range targets {
		urls[i] = "http://" + t + "/fast"
	}
	h := &histogram{}
	var sent, ok, errs atomic.Int64
	type job struct {
		due      time.Time
		url      string
		measured bool
	}
	// Enough workers that a few slow answers do not delay the others'
	// sending; a full channel still delays, and that delay is measured.
	workers := min(max(int(rate/50), 32), 256)
	jobs := make(chan job, 4096)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				err := g.get(ctx, j.url)
				if !j.measured {
					continue
				}
				sent.Add(1)
				if err != nil {
					errs.Add(1)
					continue
				}
				ok.Add(1)
				h.record(time.Since(j.due))
			}
		})
	}
	start := time.Now()
	measureFrom := start.Add(warmup)
	end := measureFrom.Add(window)
	interval := time.Duration(float64(time.Second) / rate)
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if !due.Before(end) || ctx.Err() != nil {
			break
		}
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		jobs <- job{due: due, url: urls[i%len(urls)], measured: !due.Before(measureFrom)}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return loadResult{}, err
	}
	r := loadResult{Rate: rate, Sent: sent.Load(), OK: ok.Load(), Errors: errs.Load(), hist: h,
		P50: h.quantile(0.50), P99: h.quantile(0.99), P999: h.quantile(0.999), Max: time.Duration(h.max.Load())}
	r.Throughput = float64(r.OK) / window.Seconds()
	return r, nil
}

func (g *loadGen) get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// background sends load until ctx is done, for experiments that need
// traffic rather than its latencies.
func (g *loadGen) background(ctx context.Context, targets []string, rate float64) (wait func() loadResult) {
	done := make(chan loadResult, 1)
	go func() {
		r, _ := g.run(ctx, targets, rate, 0, 24*time.Hour)
		done <- r
	}()
	return func() loadResult { return <-done }
}
