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
	"github.com/worksteal/worksteal/tasks"
)

func main() {
	// The first SIGINT or SIGTERM starts a graceful shutdown; a second one
	// ends the process at once, once a worker has handed back the tasks
	// it started (WorkerConfig.Abort: milliseconds). Notify (not Go's
	// default action) handles both, so this holds even where the example
	// starts with SIGINT ignored, as a background job of a script does.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	force := newForcedStop()
	go func() {
		<-signals
		cancel()
		<-signals
		fmt.Fprintln(os.Stderr, "example: second signal, exiting without finishing the shutdown")
		close(force.abort)
		select {
		case <-force.handedBack:
		case <-time.After(handBackWait):
		}
		os.Exit(exitForced)
	}()
	err := run(ctx, force, os.Args[1:], os.Stdout)
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

// forcedStop is how a second signal cuts the shutdown short: it closes
// abort, which a worker's Mux.Serve takes as WorkerConfig.Abort (the
// handlers still running see their contexts end, and their tasks go back
// to the queue, attempts unused); run closes handedBack once no worker of
// its holds a task, and the process exits then.
type forcedStop struct {
	abort      chan struct{}
	handedBack chan struct{}
	once       sync.Once
}

func newForcedStop() *forcedStop {
	return &forcedStop{abort: make(chan struct{}), handedBack: make(chan struct{})}
}

// workersDone closes handedBack, once.
func (f *forcedStop) workersDone() { f.once.Do(func() { close(f.handedBack) }) }

// handBackWait bounds how long a second signal waits for a worker to hand
// back its tasks: a round trip or two, unless Redis is gone, when their
// leases bring them back anyway.
const handBackWait = 3 * time.Second

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
	role                                    string // roleWeb, roleWorker or roleBoth (worker.go)
	steal                                   bool   // the web servers lend their time to the jobs
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
	fs.StringVar(&o.role, "role", roleWeb, "`web`: serve the shop, whose cheap answers run the jobs; worker: no server, a dedicated worker on the orders' queue (Mux.Serve) that also carries the jobs, beside web processes on the same Redis; both: web, and a worker in the same process")
	fs.BoolVar(&o.steal, "steal", true, "web: lend the cheap answers' time to the jobs; false leaves them all to workers (-role=worker processes on the same Redis)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch o.role {
	case roleWeb, roleBoth:
	case roleWorker:
		if o.redisURL == "" && o.redisAddrs == "" {
			// An embedded Redis is this process's alone: no web process
			// would enqueue there.
			return o, errors.New("-role=worker needs the Redis of the web processes it works for: set REDIS_URL or REDIS_ADDRS (e.g. `make run` with REDIS_URL set, and this beside it); -role=both runs a worker beside the web servers in one process, on the embedded Redis")
		}
	default:
		return o, fmt.Errorf("-role=%q: want web, worker or both", o.role)
	}
	if o.redisURL != "" && o.redisAddrs != "" {
		return o, errors.New("set -redis (REDIS_URL) or -redis-addrs (REDIS_ADDRS), not both")
	}
	if o.adminAddr == "" && o.role != roleWorker {
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
// force is the second signal's (main).
func run(ctx context.Context, force *forcedStop, args []string, stdout io.Writer) (err error) {
	defer force.workersDone()
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
	// A worker listens on none.
	var lns *listeners
	if o.role != roleWorker {
		if lns, err = listenAll(o); err != nil {
			return err
		}
		defer lns.close()
	}

	rdb, closeRedis, err := connectRedis(ctx, o, out, logger)
	if err != nil {
		return err
	}
	defer closeRedis()

	tel, err := setupOtel(ctx, out)
	if err != nil {
		return err
	}
	if o.role != roleWorker {
		fmt.Fprintln(out, "metrics: Prometheus at /metrics on the admin port")
	}
	// Flush the spans and metrics last, after the slices have ended.
	defer func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err = errors.Join(err, tel.shutdown(fctx))
	}()

	cfg := recruiter.Config{
		Logger:         logger,
		MaxConcurrent:  2,
		MeterProvider:  tel.meters,
		TracerProvider: tel.tracers,
	}
	if o.role == roleWorker {
		// The pressure gate keeps slices off a busy process's requests; a
		// worker serves none, and its handlers may keep it busy.
		cfg.Pressure = -1
	}
	rec, err := recruiter.New(rdb, cfg)
	if err != nil {
		return err
	}
	a, err := newApp(rdb, rec, logger, tel.meters, tel.tracers)
	if err != nil {
		return errors.Join(err, rec.Shutdown(ctx))
	}
	a.role = o.role
	if o.role == roleWorker {
		return a.runWorker(ctx, force, o, out)
	}
	if err := a.seed(ctx, out); err != nil {
		return errors.Join(fmt.Errorf("seed: %w", err), rec.Shutdown(ctx))
	}
	if o.steal {
		if err := a.registerJobs(tel.meters, true); err != nil {
			return errors.Join(err, rec.Shutdown(ctx))
		}
	}
	// -role=both: the worker's own Mux, so that the summary tells its
	// confirmations from the stolen slices'.
	var workerMux *tasks.Mux
	if o.role == roleBoth {
		if workerMux, err = a.newMux(&a.count.workerSent); err != nil {
			return errors.Join(err, rec.Shutdown(ctx))
		}
	}
	srv, err := a.serve(lns, tel, logger, o.traceURL)
	if err != nil {
		return errors.Join(err, rec.Shutdown(ctx))
	}
	if !o.steal {
		fmt.Fprintln(out, "-steal=false: these servers run no job; run -role=worker processes on this Redis to work the orders and carry the jobs")
	}
	fmt.Fprintf(out, "listening http=%s echo=%s grpc=%s admin=%s\n", lns.http.Addr(), lns.echo.Addr(), lns.grpc.Addr(), lns.admin.Addr())
	printTour(out, lns)

	// A worker beside the servers (-role=both): started after the
	// servers, stopped by ctx as they are.
	worked := make(chan error, 1)
	workCtx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	if o.role == roleBoth {
		go func() { worked <- a.work(workCtx, workerMux, force) }()
	} else {
		worked <- nil
		force.workersDone()
	}

	// Without ctx's deadline (-duration): a client's own timer could see
	// it pass before ctx does, and count a request cut short as failed.
	trafficCtx, stopTraffic := context.WithCancel(context.WithoutCancel(ctx))
	defer stopTraffic()
	waitTraffic := func() {}
	if o.traffic {
		waitTraffic = a.generateTraffic(trafficCtx, lns)
	}

	serveErr := a.report(ctx, srv.failed, out, o.summaryEvery)

	// Clients first, then the servers, the worker, then the slices their
	// requests started, then the dashboard; the exporters flush and Redis
	// closes in the deferred calls. A server that failed on its own
	// (serveErr) leaves ctx running: the worker is stopped here too.
	stopTraffic()
	waitTraffic()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = errors.Join(serveErr, srv.shutdown(sctx))
	stopWorker()
	err = errors.Join(err, <-worked, rec.Shutdown(sctx), srv.dashboard.Close())
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
