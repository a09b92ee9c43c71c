package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

const (
	catalogSize = 1000
	itemTTL     = 10 * time.Second
	loadDelay   = 5 * time.Millisecond // the catalog's source of truth is slow
	popularKey  = "example:popular"    // item id -> reads
	popularTop  = 8                    // the items refresh-popular keeps warm
)

// app is the catalog service: item reads through a Redis cache.
type app struct {
	rdb *redis.Client
	rec *recruiter.Recruiter

	requests, hits atomic.Uint64 // served by the handler
	failed         atomic.Uint64 // the traffic generator's failed requests
}

func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", a.getItem)
	mux.HandleFunc("GET /debug/worksteal", a.debugWorksteal)
	return stealhttp.Middleware(a.rec, stealhttp.WithFilter(func(r *http.Request) bool {
		return r.URL.Path != "/debug/worksteal" // the status page lends nothing
	}))(mux)
}

func itemKey(id int) string { return "example:item:" + strconv.Itoa(id) }

func (a *app) getItem(w http.ResponseWriter, r *http.Request) {
	a.requests.Add(1)
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id < 0 || id >= catalogSize {
		http.Error(w, "no such item", http.StatusNotFound)
		return
	}
	ctx := r.Context()
	pipe := a.rdb.Pipeline()
	cached := pipe.Get(ctx, itemKey(id))
	pipe.ZIncrBy(ctx, popularKey, 1, strconv.Itoa(id))
	_, _ = pipe.Exec(ctx) // each command's error is read from the command itself
	w.Header().Set("Content-Type", "application/json")
	if body, err := cached.Bytes(); err == nil {
		a.hits.Add(1)
		w.Header().Set("X-Cache", "HIT")
		// A cache hit is a fast exit: if stealhttp drew this request, it
		// lends a slice of its time once the response is done.
		recruiter.MarkFastExit(ctx)
		w.Write(body)
		return
	}
	// A miss, or Redis failing: serve from the source either way.
	body, err := loadItem(ctx, id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	a.rdb.Set(ctx, itemKey(id), body, itemTTL) // best effort: a failed fill is a later miss
	w.Header().Set("X-Cache", "MISS")
	w.Write(body)
}

func (a *app) debugWorksteal(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(a.rec.Stats())
}

// loadItem stands in for the catalog's database.
func loadItem(ctx context.Context, id int) ([]byte, error) {
	select {
	case <-time.After(loadDelay):
		return fmt.Appendf(nil, `{"id":%d,"name":"item %d","price_cents":%d}`, id, id, 100+id*37%9900), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// refreshPopular reloads the most read items before their cache entries
// expire, so that they never miss; popularTop bounds the slice.
func (a *app) refreshPopular(ctx context.Context) (recruiter.Report, error) {
	ids, err := a.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: popularKey, Start: 0, Stop: popularTop - 1, Rev: true}).Result()
	if err != nil {
		return recruiter.Report{}, fmt.Errorf("popular items: %w", err)
	}
	refreshed := 0
	for _, member := range ids {
		id, err := strconv.Atoi(member)
		if err != nil {
			continue
		}
		body, err := loadItem(ctx, id)
		if err == nil {
			err = a.rdb.Set(ctx, itemKey(id), body, itemTTL).Err()
		}
		if err != nil {
			return recruiter.Report{Items: refreshed}, fmt.Errorf("refresh item %d: %w", id, err)
		}
		refreshed++
	}
	return recruiter.Report{Items: refreshed}, nil
}

const (
	trafficWorkers = 4
	trafficRate    = 200 // requests per second, all workers together
	trafficItems   = 100 // traffic reads only the first items of the catalog
)

// generateTraffic reads items from baseURL until ctx is done, and returns
// a function that waits for its workers to stop. Ids follow a Zipf law, as
// real catalog reads do, so most reads are cache hits.
func generateTraffic(ctx context.Context, baseURL string, failed *atomic.Uint64) (wait func()) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = trafficWorkers
	client := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for range trafficWorkers {
		wg.Go(func() {
			zipf := rand.NewZipf(rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), 1.2, 1, trafficItems-1)
			tick := time.NewTicker(trafficWorkers * time.Second / trafficRate)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if err := get(ctx, client, fmt.Sprintf("%s/items/%d", baseURL, zipf.Uint64())); err != nil && ctx.Err() == nil {
					failed.Add(1)
				}
			}
		})
	}
	return func() {
		wg.Wait()
		transport.CloseIdleConnections()
	}
}

func get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
