// Command bench is the fleet benchmark of worksteal (`make bench-fleet`):
// one run starts a throw-away redis-server, fleets of 1, 2 and 4 service
// processes (this program re-executed with -role service) and an open-loop
// load generator, and measures what stolen work costs requests and Redis and
// how well it keeps a queue, against a dedicated daemon. It rewrites the
// fleet section of BENCHMARKS.md (between its markers) and the plots in
// bench/results.
//
//	go run ./bench                # the full set, about 13 minutes
//	go run ./bench -quick         # a short version for development, under a minute
//	go run ./bench -pace          # automatic pace against fleet size and traffic, and after a scale-in and a scale-out (make bench-pace)
//	go run ./bench -pace-large    # only the pace at 10,000 processes, steady and after a scale-in to 100 (make bench-pace ARGS=-pace-large)
//	go run ./bench -peers         # worksteal, asynq and River on the same tasks, a few minutes (make bench-peers; -long: longer)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// options of the orchestrating process.
type options struct {
	quick     bool
	long      bool
	pace      bool
	paceLarge bool
	peers     bool
	port      int
	markdown  string
	resultDir string
	skip      map[string]bool
	only      map[string]bool // the request-cost variants to run besides none and the control; empty: all
	peerExps  map[string]bool // with -peers, the experiments to run; empty: all
}

func main() {
	role := flag.String("role", "bench", "bench (the orchestrator); service, daemon or enqueuer (started by the orchestrator)")
	var o options
	flag.BoolVar(&o.quick, "quick", false, "short runs for development (under a minute); the figures are not for publishing")
	flag.BoolVar(&o.pace, "pace", false, "run the pace benchmark instead (about 13 minutes): automatic pace against fleet size and traffic, and after a scale-in and a scale-out; rewrites its own section of BENCHMARKS.md and bench/results/pace-*.svg")
	flag.BoolVar(&o.paceLarge, "pace-large", false, "run only the large-fleet part of the pace benchmark, not its sweep (about 6 minutes; with or without -pace): 10,000 processes with no traffic, steady and then shrunk to 100 (the youngest, the oldest, or both leave), one fleet after the other; rewrites its own section of BENCHMARKS.md (between <!-- pace-large:begin --> and <!-- pace-large:end -->)")
	flag.BoolVar(&o.peers, "peers", false, "run the peer benchmark instead (a few minutes): worksteal, asynq and River on the same tasks, on a redis-server and a PostgreSQL it starts; rewrites its own section of BENCHMARKS.md and bench/results/peers-*.svg")
	flag.BoolVar(&o.long, "long", false, "with -peers: more rounds and larger runs (about 20 minutes)")
	flag.IntVar(&o.port, "port", 0, "port of the throw-away redis-server (0: a free one)")
	flag.StringVar(&o.markdown, "md", "BENCHMARKS.md", "file whose fleet section is rewritten (between <!-- fleet:begin --> and <!-- fleet:end -->); empty: print to stdout")
	flag.StringVar(&o.resultDir, "results", "bench/results", "folder of the SVG plots")
	skip := flag.String("skip", "", "comma-separated experiments to leave out: cost,redis,health,scale (development only)")
	only := flag.String("variants", "", "comma-separated request-cost variants to run besides none and the control, such as tasks,tasks-c1 (development only; empty: all)")
	peerExps := flag.String("peer-exps", "", "with -peers, comma-separated experiments to run alone, such as wait-32,noop-32; their section goes to stdout, BENCHMARKS.md and the plots untouched (empty: all)")
	sf := serviceFlags{}
	sf.register(flag.CommandLine)
	flag.Parse()

	switch *role {
	case "service", "daemon":
		if err := runService(*role, sf); err != nil {
			fmt.Fprintln(os.Stderr, "bench "+*role+":", err)
			os.Exit(1)
		}
		return
	case "enqueuer":
		if err := runEnqueuer(sf); err != nil {
			fmt.Fprintln(os.Stderr, "bench enqueuer:", err)
			os.Exit(1)
		}
		return
	case "bench":
	default:
		fmt.Fprintf(os.Stderr, "bench: unknown -role %q\n", *role)
		os.Exit(2)
	}
	o.skip, o.only, o.peerExps = commaSet(*skip), commaSet(*only), commaSet(*peerExps)
	// The orchestrator's own logs are short; the services' go to their stderr.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	switch {
	case o.paceLarge:
		err = runPaceLargeBench(ctx, o)
	case o.pace:
		err = runPaceBench(ctx, o)
	case o.peers:
		err = runPeerBench(ctx, o)
	default:
		err = run(ctx, o)
	}
	stop()
	killAll() // whatever happened, no redis-server or service outlives us
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "bench: interrupted; every process it started is stopped")
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run is the whole benchmark: the experiments in order, then the report.
func run(ctx context.Context, o options) (err error) {
	began := time.Now()
	e, err := startEnv(ctx, o)
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			_ = os.RemoveAll(e.dir)
			return
		}
		killAll() // so that the logs are complete
		logf("the logs of redis-server and the services are kept in %s", e.dir)
	}()
	rep := &report{opts: o, machine: describeMachine(e.redisVersion), began: began, loadBefore: loadAverage()}
	steps := []struct {
		name string
		fn   func(context.Context, *env, *report) error
	}{
		{"cost", runRequestCost},
		{"redis", runRedisCost},
		{"health", runHealth},
		{"scale", runScale},
	}
	for _, s := range steps {
		if o.skip[s.name] {
			continue
		}
		t0 := time.Now()
		logf("== %s", s.name)
		if err := s.fn(ctx, e, rep); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		logf("== %s done in %v", s.name, time.Since(t0).Round(time.Second))
	}
	rep.took, rep.loadAfter = time.Since(began), loadAverage()
	return rep.write()
}

// commaSet is the set of a comma-separated list's non-empty items.
func commaSet(list string) map[string]bool {
	set := map[string]bool{}
	for s := range strings.SplitSeq(list, ",") {
		if s != "" {
			set[s] = true
		}
	}
	return set
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}
