package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/telemetry"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// runOutput runs run in this process (so that -race sees the example's
// own code) and returns its output lines and error.
func runOutput(t *testing.T, args ...string) ([]string, error) {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(t.Context(), newForcedStop(), args, pw)
		pw.Close()
		done <- err
	}()
	var lines []string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, <-done
}

// TestRunInProcess runs the example in this process, so that -race sees
// its code, until every job has done its work, then stops it as a signal
// would and checks the final summary: every stack served, hits lent their
// time, no request of the traffic generator failed.
func TestRunInProcess(t *testing.T) {
	t.Parallel()
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, newForcedStop(), []string{"-http=127.0.0.1:0", "-echo=127.0.0.1:0", "-grpc=127.0.0.1:0", "-admin=127.0.0.1:0", "-redis="}, pw)
		pw.Close()
		done <- err
	}()
	var (
		mu    sync.Mutex
		lines []string
	)
	listening := make(chan string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				listening <- m[4] // the admin port
			}
		}
	}()
	select {
	case addr := <-listening:
		checkJobsDidTheirWork(t, addr)
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	}
	stop()
	err := <-done
	<-drained
	out := strings.Join(lines, "\n")
	if err != nil {
		t.Fatalf("run after its context ended: %v, want nil\noutput:\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^final  requests http=(\d+) echo=(\d+) grpc=(\d+) fast=(\d+) failed=(\d+) `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no final summary in the output:\n%s", out)
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	if n(1) == 0 || n(2) == 0 || n(3) == 0 || n(4) == 0 {
		t.Errorf("requests http=%d echo=%d grpc=%d fast=%d: want each stack served, and fast exits", n(1), n(2), n(3), n(4))
	}
	if failed := n(5); failed != 0 {
		t.Errorf("the traffic generator had %d failed requests, want 0\noutput:\n%s", failed, out)
	}
}

func TestRunReportsBusyPort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, flag := range []string{"-http", "-echo", "-grpc", "-admin"} {
		args := []string{"-http=127.0.0.1:0", "-echo=127.0.0.1:0", "-grpc=127.0.0.1:0", "-admin=127.0.0.1:0", "-traffic=false", "-redis=", flag + "=" + ln.Addr().String()}
		_, err := runOutput(t, args...)
		if err == nil || !strings.Contains(err.Error(), "listen on "+ln.Addr().String()) || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s on a busy port: error %v, want one naming the address and the flag", flag, err)
		}
	}
}

func TestParseFlagsRejectsTwoRedis(t *testing.T) {
	t.Parallel()
	_, err := parseFlags([]string{"-redis=redis://localhost:6379", "-redis-addrs=a:1,b:2"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("parseFlags with -redis and -redis-addrs: %v, want an error", err)
	}
}

func TestOrderValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o  order
		ok bool
	}{
		{order{Customer: "ada", ItemID: 0, Quantity: 1}, true},
		{order{Customer: "ada", ItemID: catalogSize - 1, Quantity: maxQuantity}, true},
		{order{Customer: "", ItemID: 1, Quantity: 1}, false},
		{order{Customer: strings.Repeat("x", 65), ItemID: 1, Quantity: 1}, false},
		{order{Customer: "ada", ItemID: -1, Quantity: 1}, false},
		{order{Customer: "ada", ItemID: catalogSize, Quantity: 1}, false},
		{order{Customer: "ada", ItemID: 1, Quantity: 0}, false},
		{order{Customer: "ada", ItemID: 1, Quantity: maxQuantity + 1}, false},
	} {
		err := tc.o.validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, errBadOrder)) {
			t.Errorf("%+v.validate() = %v, want ok %t (errors wrapping errBadOrder)", tc.o, err, tc.ok)
		}
	}
}

// TestRunOnEmbeddedRedis runs the example as `make run` does, on its
// embedded Redis, without traffic: it says once that this Redis is not
// for production, logs nothing of maxmemory or eviction once the
// recruiter has read the policy, and its /metrics has the scheduled
// jobs' next ticks.
func TestRunOnEmbeddedRedis(t *testing.T) {
	t.Parallel()
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, newForcedStop(), []string{"-http=127.0.0.1:0", "-echo=127.0.0.1:0", "-grpc=127.0.0.1:0", "-admin=127.0.0.1:0", "-redis=", "-traffic=false"}, pw)
		pw.Close()
		done <- err
	}()
	var lines []string
	listening := make(chan string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				listening <- m[4]
			}
		}
	}()
	select {
	case addr := <-listening:
		checkEmbeddedEviction(t, addr)
		checkNextTicks(t, addr)
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("run after its context ended: %v, want nil", err)
	}
	<-drained
	checkEmbeddedLog(t, lines)
}

// checkNextTicks checks that /metrics has each scheduled job's next tick.
func checkNextTicks(t *testing.T, adminAddr string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.Transport.(*http.Transport).CloseIdleConnections()
	nextTick := promName(telemetry.MetricJobNextTick) + "_seconds{"
	eventually(t, "/metrics has the scheduled jobs' next ticks", func(context.Context) error {
		_, body := httpDo(t, client, http.MethodGet, "http://"+adminAddr+"/metrics", "")
		for _, job := range []string{reportJob, trimJob} {
			found := false
			for line := range strings.Lines(string(body)) {
				found = found || strings.HasPrefix(line, nextTick) && strings.Contains(line, `="`+job+`"`)
			}
			if !found {
				return fmt.Errorf("no %s...} of job %s", nextTick, job)
			}
		}
		return nil
	})
}

// checkEmbeddedLog checks what the example logs of its embedded Redis:
// one INFO line saying it is not for production, and nothing of
// maxmemory or eviction, settings miniredis does not have.
func checkEmbeddedLog(t *testing.T, lines []string) {
	t.Helper()
	about := regexp.MustCompile(`(?i)maxmemory|eviction`)
	embedded := 0
	for _, l := range lines {
		if about.MatchString(l) {
			t.Errorf("the example logs, on its embedded Redis: %s", l)
		}
		if strings.Contains(l, "level=INFO") && strings.Contains(l, "embedded miniredis") && strings.Contains(l, "not for production") {
			embedded++
		}
	}
	if embedded != 1 {
		t.Errorf("%d INFO lines say the Redis is an embedded one, not for production; want 1", embedded)
	}
}

// checkEmbeddedEviction checks that the recruiter read the embedded
// Redis's eviction policy, noeviction (connectRedis answers INFO memory
// for it), rather than failing to read it.
func checkEmbeddedEviction(t *testing.T, adminAddr string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.Transport.(*http.Transport).CloseIdleConnections()
	eventually(t, "the dashboard shows the policy noeviction", func(context.Context) error {
		_, body := httpDo(t, client, http.MethodGet, "http://"+adminAddr+"/debug/worksteal?format=json", "")
		doc, err := decodeDashboard(body)
		if err != nil {
			return err
		}
		if doc.EvictionPolicy != "noeviction" || doc.EvictionRisk != "" {
			return fmt.Errorf("eviction policy %q, risk %q; want noeviction, none", doc.EvictionPolicy, doc.EvictionRisk)
		}
		return nil
	})
}
