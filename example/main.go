// Command example is worksteal's first contact: a small catalog service
// whose cache hits do the housekeeping of an expiring session store, with
// no cron job and no daemon.
//
//	go run ./example                              # embedded Redis (miniredis)
//	REDIS_URL=redis://localhost:6379/0 go run ./example
//	curl localhost:8080/items/7                   # X-Cache: HIT or MISS
//	curl localhost:8080/debug/worksteal           # the recruiter's counters
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/recruiter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done or -duration has passed, then shuts down
// in dependency order and prints a final summary.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	fs.SetOutput(stdout)
	addr := fs.String("addr", "127.0.0.1:8080", "listen `address`; port 0 picks a free one")
	redisURL := fs.String("redis", os.Getenv("REDIS_URL"), "Redis `URL` (redis:// or rediss://); empty runs an embedded miniredis; defaults to $REDIS_URL")
	traffic := fs.Bool("traffic", true, "send ~200 req/s of skewed catalog reads to the server itself")
	duration := fs.Duration("duration", 0, "stop after this long; 0 runs until SIGINT or SIGTERM")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	out := &lockedWriter{w: stdout}
	logger := slog.New(slog.NewTextHandler(out, nil))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another instance running? pick a port with -addr)", *addr, err)
	}
	defer ln.Close()

	rdb, closeRedis, err := connectRedis(ctx, *redisURL, out)
	if err != nil {
		return err
	}
	defer closeRedis()

	if err := seedSessions(ctx, rdb, time.Now()); err != nil {
		return fmt.Errorf("seed sessions: %w", err)
	}
	// With no fast exits at all (-traffic=false), the idle fallback still
	// runs each job every few seconds.
	rec, err := recruiter.New(rdb, recruiter.Config{IdleFallback: 5 * time.Second, Logger: logger})
	if err != nil {
		return err
	}
	a := &app{rdb: rdb, rec: rec}
	evict, err := evictSessions(rdb)
	if err != nil {
		return errors.Join(err, rec.Shutdown(ctx))
	}
	if err := errors.Join(
		// Drain a backlog at once (More releases the lock), then look again once a second.
		rec.Register(evict, recruiter.JobConfig{Rate: 0.05, Budget: 50 * time.Millisecond, Every: time.Second}),
		rec.Register(recruiter.Func("refresh-popular", a.refreshPopular), recruiter.JobConfig{Rate: 0.02, Budget: 100 * time.Millisecond, Every: 2 * time.Second}),
	); err != nil {
		return errors.Join(err, rec.Shutdown(ctx))
	}

	srv := &http.Server{
		Handler:           a.routes(),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	baseURL := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "listening on %s\n", baseURL)

	trafficCtx, stopTraffic := context.WithCancel(ctx)
	defer stopTraffic()
	waitTraffic := func() {}
	if *traffic {
		waitTraffic = generateTraffic(trafficCtx, baseURL, &a.failed)
	}

	var serveErr error
	start := time.Now()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case serveErr = <-served:
			break loop
		case <-tick.C:
			fmt.Fprintln(out, a.summary(ctx, fmt.Sprintf("t=%v", time.Since(start).Round(time.Second))))
		}
	}

	// Clients first, then the server, then the slices its requests started;
	// Redis closes last, in the deferred closeRedis.
	stopTraffic()
	waitTraffic()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err = errors.Join(serveErr, srv.Shutdown(sctx), rec.Shutdown(sctx))
	fmt.Fprintln(out, a.summary(sctx, "final"))
	return err
}

// connectRedis returns a client of REDIS_URL's Redis, or of an embedded
// miniredis when url is empty, and the function that closes them.
func connectRedis(ctx context.Context, url string, out io.Writer) (*redis.Client, func(), error) {
	if url == "" {
		mr := miniredis.NewMiniRedis()
		mr.ClockTTL(true) // expire keys by the wall clock, as Redis does; lock cooldowns rely on it
		if err := mr.Start(); err != nil {
			return nil, nil, fmt.Errorf("start embedded redis: %w", err)
		}
		fmt.Fprintf(out, "redis: embedded miniredis at %s (set REDIS_URL to use a real Redis)\n", mr.Addr())
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		return rdb, func() { rdb.Close(); mr.Close() }, nil
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, fmt.Errorf("redis URL: %w", err)
	}
	rdb := redis.NewClient(opts)
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, nil, fmt.Errorf("redis at %s: %w", opts.Addr, err)
	}
	fmt.Fprintf(out, "redis: %s db %d, tls %t\n", opts.Addr, opts.DB, opts.TLSConfig != nil)
	return rdb, func() { rdb.Close() }, nil
}

// summary is one line: the server's requests, each job's outcomes in this
// process, and what is left of the session store.
func (a *app) summary(ctx context.Context, label string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-5s requests=%d hits=%d failed=%d", label, a.requests.Load(), a.hits.Load(), a.failed.Load())
	for _, j := range a.rec.Stats().Jobs {
		// Timeouts apart: a loaded machine makes some, and they lose nothing.
		fmt.Fprintf(&b, " | %s ran=%d skipped=%d failed=%d timeouts=%d items=%d", j.Name, j.Ran,
			j.Skipped(), j.Errors+j.Panics, j.Timeouts, j.Items)
	}
	sessions, err := a.rdb.ZCard(ctx, sessionsKey).Result()
	expired, err2 := a.rdb.ZCount(ctx, sessionsKey, "-inf", strconv.FormatInt(time.Now().UnixMilli(), 10)).Result()
	if err := errors.Join(err, err2); err != nil {
		return b.String() + " | sessions: " + err.Error()
	}
	fmt.Fprintf(&b, " | sessions=%d expired=%d", sessions, expired)
	return b.String()
}

// lockedWriter serializes the summaries, the logger and the server's error
// log, which all write to stdout from their own goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
