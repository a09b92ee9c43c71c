package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"

	"github.com/worksteal/worksteal/dashboard"
)

// listeners are the three stacks' ports and the admin port, bound before
// anything else starts.
type listeners struct {
	http, echo, grpc, admin net.Listener
}

func listenAll(o options) (*listeners, error) {
	var lns listeners
	for _, l := range []struct {
		flag, addr string
		ln         *net.Listener
	}{
		{"-http", o.httpAddr, &lns.http},
		{"-echo", o.echoAddr, &lns.echo},
		{"-grpc", o.grpcAddr, &lns.grpc},
		{"-admin", o.adminAddr, &lns.admin},
	} {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			lns.close()
			return nil, fmt.Errorf("listen on %s: %w (is another instance running? pick another port with %s, or 0 for a free one)", l.addr, err, l.flag)
		}
		*l.ln = ln
	}
	return &lns, nil
}

// close closes the listeners that are open; the servers' Shutdown closes
// them too, which is harmless.
func (l *listeners) close() {
	for _, ln := range []net.Listener{l.http, l.echo, l.grpc, l.admin} {
		if ln != nil {
			ln.Close()
		}
	}
}

// servers are the three stacks serving, and the admin server of the
// dashboard and the metrics.
type servers struct {
	http, echo, admin *http.Server
	grpc              *grpc.Server
	dashboard         *dashboard.Dashboard
	failed            chan error // the first server that stopped on its own
}

// The net/http servers' timeouts. A write may last as long as the order
// status's wait (statusWait) and then some; idle keep-alive connections
// are closed after a minute.
const (
	readHeaderTimeout = 5 * time.Second
	writeTimeout      = 10 * time.Second
	idleTimeout       = 60 * time.Second
)

func newHTTPServer(h http.Handler, errLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          errLog,
	}
}

// serve starts the three stacks and the admin server on lns.
func (a *app) serve(lns *listeners, tel *otelSetup, logger *slog.Logger, traceURL string) (*servers, error) {
	opts := []dashboard.Option{
		dashboard.WithTitle("worksteal example: catalog, orders, sessions"),
		dashboard.WithTasks(a.mux),
		dashboard.WithQueues(a.orders),
		dashboard.WithGauge("queue depth", a.queueDepth),
		dashboard.WithGauge("sessions", func(ctx context.Context) (float64, error) {
			stored, _, err := a.sessionCounts(ctx)
			return float64(stored), err
		}),
	}
	if traceURL != "" {
		opts = append(opts, dashboard.WithTraceURL(traceURL))
	}
	dash, err := dashboard.New(a.rec, opts...)
	if err != nil {
		return nil, err
	}
	errLog := slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	s := &servers{
		http:      newHTTPServer(a.httpRoutes(tel), errLog),
		echo:      newHTTPServer(a.echoRoutes(tel), errLog),
		admin:     newHTTPServer(adminRoutes(tel, dash), errLog),
		grpc:      a.grpcServer(tel),
		dashboard: dash,
		failed:    make(chan error, 4),
	}
	serve := func(stack string, f func() error) {
		if err := f(); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, grpc.ErrServerStopped) {
			s.failed <- fmt.Errorf("%s server: %w", stack, err)
		}
	}
	go serve("http", func() error { return s.http.Serve(lns.http) })
	go serve("echo", func() error { return s.echo.Serve(lns.echo) })
	go serve("grpc", func() error { return s.grpc.Serve(lns.grpc) })
	go serve("admin", func() error { return s.admin.Serve(lns.admin) })
	return s, nil
}

// adminRoutes are the operator's pages, on a port of their own so that
// the shop's public ports expose neither: the dashboard and the metrics.
// They lend no time to the recruiter: their traffic is not the shop's.
func adminRoutes(tel *otelSetup, dashboard http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /debug/worksteal", dashboard)
	mux.Handle("GET /metrics", tel.metrics)
	return mux
}

// shutdown drains the servers: requests in flight finish, new ones
// are refused. gRPC's graceful stop has no deadline of its own, so ctx's
// end cuts it short.
func (s *servers) shutdown(ctx context.Context) error {
	stopped := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(stopped)
	}()
	err := errors.Join(s.http.Shutdown(ctx), s.echo.Shutdown(ctx), s.admin.Shutdown(ctx))
	select {
	case <-stopped:
	case <-ctx.Done():
		s.grpc.Stop()
		<-stopped
		err = errors.Join(err, fmt.Errorf("grpc server: %w", ctx.Err()))
	}
	return err
}

// queueDepth is the dashboard's gauge: the orders' steps not yet done.
func (a *app) queueDepth(ctx context.Context) (float64, error) {
	st, err := a.orders.Depth(ctx)
	return float64(st.Pending + st.Leased + st.Delayed), err
}
