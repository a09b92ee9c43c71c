package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/worksteal/worksteal/recruiter"
)

func main() {
	// The first SIGINT or SIGTERM starts a graceful shutdown; a second one
	// ends the process at once. Notify (not Go's default action) handles
	// both, so this holds even where the example starts with SIGINT
	// ignored, as a background job of a script does.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-signals
		cancel()
		<-signals
		fmt.Fprintln(os.Stderr, "example: second signal, exiting without finishing the shutdown")
		os.Exit(exitForced)
	}()
	err := run(ctx, os.Args[1:], os.Stdout)
	cancel()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
	// A stop by SIGINT or SIGTERM is the normal end of a service: exit 0,
	// so that `make run` ends quietly on Ctrl-C.
}

// exitForced is the exit code after a second signal: 128 + SIGINT, as a
// shell reports a process killed by Ctrl-C.
const exitForced = 130

// options are the command line; most flags fall back to an environment
// variable, named in their help.
type options struct {
	httpAddr, echoAddr, grpcAddr, adminAddr string
	redisURL, redisAddrs, redisCA           string
	redisTLS                                bool
	traceURL                                string
	traffic                                 bool
	duration, summaryEvery                  time.Duration
	debug                                   bool
}

func parseFlags(args []string, out io.Writer) (options, error) {
	var o options
	traffic, err := envBool("TRAFFIC", true)
	if err != nil {
		return o, err
	}
	redisTLS, err := envBool("REDIS_TLS", false)
	if err != nil {
		return o, err
	}
	debug, err := envBool("DEBUG", false)
	if err != nil {
		return o, err
	}
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.httpAddr, "http", envOr("HTTP_ADDR", "127.0.0.1:8080"), "net/http listen `address` ($HTTP_ADDR); port 0 picks a free one")
	fs.StringVar(&o.echoAddr, "echo", envOr("ECHO_ADDR", "127.0.0.1:8081"), "echo listen `address` ($ECHO_ADDR)")
	fs.StringVar(&o.grpcAddr, "grpc", envOr("GRPC_ADDR", "127.0.0.1:9090"), "gRPC listen `address` ($GRPC_ADDR)")
	fs.StringVar(&o.adminAddr, "admin", envOr("ADMIN_ADDR", "127.0.0.1:8079"), "admin listen `address` of the dashboard (/debug/worksteal) and the Prometheus metrics (/metrics) ($ADMIN_ADDR); keep it private")
	fs.StringVar(&o.redisURL, "redis", os.Getenv("REDIS_URL"), "Redis `URL`, redis:// or rediss:// ($REDIS_URL); empty: an embedded miniredis")
	fs.StringVar(&o.redisAddrs, "redis-addrs", os.Getenv("REDIS_ADDRS"), "comma-separated Redis Cluster `addresses` ($REDIS_ADDRS), authenticated with $REDIS_USERNAME and $REDIS_PASSWORD if set; instead of -redis")
	fs.BoolVar(&o.redisTLS, "redis-tls", redisTLS, "connect to the cluster of -redis-addrs over TLS, verified with the system roots unless -redis-ca ($REDIS_TLS=1)")
	fs.StringVar(&o.redisCA, "redis-ca", os.Getenv("REDIS_CA"), "PEM `file` of a private CA for rediss:// or a TLS cluster; implies -redis-tls ($REDIS_CA)")
	fs.StringVar(&o.traceURL, "trace-url", os.Getenv("TRACE_URL"), "link the dashboard's trace ids to a tracing UI: a `format` with one %s, e.g. http://localhost:16686/trace/%s ($TRACE_URL)")
	fs.BoolVar(&o.traffic, "traffic", traffic, "drive all three stacks with a built-in traffic generator ($TRAFFIC=false to turn it off)")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long; 0 runs until SIGINT or SIGTERM")
	fs.DurationVar(&o.summaryEvery, "summary", 3*time.Second, "print a summary line this often")
	fs.BoolVar(&o.debug, "debug", debug, "log at debug level: every confirmation sent ($DEBUG=1)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.redisURL != "" && o.redisAddrs != "" {
		return o, errors.New("set -redis (REDIS_URL) or -redis-addrs (REDIS_ADDRS), not both")
	}
	if o.adminAddr == "" {
		// Not all interfaces by accident: the dashboard is for the operator.
		return o, errors.New("-admin (ADMIN_ADDR) is empty: give the admin port an address, e.g. 127.0.0.1:8079")
	}
	if o.redisTLS && o.redisAddrs == "" && !strings.HasPrefix(o.redisURL, "rediss://") {
		return o, errors.New("-redis-tls (REDIS_TLS) is for a cluster (-redis-addrs); for one server use a rediss:// URL")
	}
	if o.summaryEvery <= 0 {
		return o, errors.New("-summary must be positive")
	}
	return o, nil
}

func envOr(name, fallback string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return fallback
}

// envBool is a boolean flag's default: the variable as strconv.ParseBool
// reads it (1, t, true, 0, f, false...), or fallback when it is unset or
// empty.
func envBool(name string, fallback bool) (bool, error) {
	v := os.Getenv(name)
	if v == "" {
		return fallback, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("$%s=%q: want true or false", name, v)
	}
	return b, nil
}

// run serves until ctx is done or -duration has passed, then shuts down in
// dependency order and prints a final summary. A stop by ctx is no error.
func run(ctx context.Context, args []string, stdout io.Writer) (err error) {
	o, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	out := &lockedWriter{w: stdout}
	level := slog.LevelInfo
	if o.debug {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level}))

	// Ports first: a port in use is the likeliest error, and the cheapest.
	lns, err := listenAll(o)
	if err != nil {
		return err
	}
	defer lns.close()

	rdb, closeRedis, err := connectRedis(ctx, o, out, logger)
	if err != nil {
		return err
	}
	defer closeRedis()

	tel, err := setupOtel(ctx, out)
	if err != nil {
		return err
	}
	// Flush the spans and metrics last, after the slices have ended.
	defer func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err = errors.Join(err, tel.shutdown(fctx))
	}()

	rec, err := recruiter.New(rdb, recruiter.Config{
		Logger:         logger,
		MaxConcurrent:  2,
		MeterProvider:  tel.meters,
		TracerProvider: tel.tracers,
	})
	if err != nil {
		return err
	}
	a, err := newApp(rdb, rec, logger, tel.meters, tel.tracers)
	if err != nil {
		return errors.Join(err, rec.Shutdown(ctx))
	}
	if err := a.seed(ctx, out); err != nil {
		return errors.Join(fmt.Errorf("seed: %w", err), rec.Shutdown(ctx))
	}
	if err := a.registerJobs(tel.meters); err != nil {
		return errors.Join(err, rec.Shutdown(ctx))
	}
	srv, err := a.serve(lns, tel, logger, o.traceURL)
	if err != nil {
		return errors.Join(err, rec.Shutdown(ctx))
	}
	fmt.Fprintf(out, "listening http=%s echo=%s grpc=%s admin=%s\n", lns.http.Addr(), lns.echo.Addr(), lns.grpc.Addr(), lns.admin.Addr())
	printTour(out, lns)

	// Without ctx's deadline (-duration): a client's own timer could see
	// it pass before ctx does, and count a request cut short as failed.
	trafficCtx, stopTraffic := context.WithCancel(context.WithoutCancel(ctx))
	defer stopTraffic()
	waitTraffic := func() {}
	if o.traffic {
		waitTraffic = a.generateTraffic(trafficCtx, lns)
	}

	serveErr := a.report(ctx, srv.failed, out, o.summaryEvery)

	// Clients first, then the servers, then the slices their requests
	// started, then the dashboard; the exporters flush and Redis closes in
	// the deferred calls.
	stopTraffic()
	waitTraffic()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = errors.Join(serveErr, srv.shutdown(sctx), rec.Shutdown(sctx), srv.dashboard.Close())
	fmt.Fprintln(out, a.summary(sctx, "final"))
	return err
}

// printTour says what to try by hand.
func printTour(out io.Writer, lns *listeners) {
	h, e, g, adm := lns.http.Addr(), lns.echo.Addr(), lns.grpc.Addr(), lns.admin.Addr()
	fmt.Fprintf(out, strings.TrimLeft(`
  curl -i http://%[1]s/items/7                  # X-Cache: HIT or MISS; echo serves the same on %[2]s
  curl -i -d '{"customer":"ada","item_id":7,"quantity":2}' http://%[1]s/orders
  curl -i http://%[1]s/orders/ID                # step k of 3 (reserve, charge, confirm); waits up to 2s for the end
  grpcurl -plaintext %[3]s list                 # reflection; then e.g.
  grpcurl -plaintext -d '{"id":7}' %[3]s worksteal.example.catalog.v1.Catalog/GetItem
  dashboard: http://%[4]s/debug/worksteal   (?format=json for JSON)
  metrics:   http://%[4]s/metrics

`, "\n"), h, e, g, adm)
}

// lockedWriter serializes the summaries, the logger and the servers' error
// logs, which all write to stdout from their own goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
