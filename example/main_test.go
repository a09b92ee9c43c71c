package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
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
		err := run(t.Context(), args, pw)
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
		err := run(ctx, []string{"-http=127.0.0.1:0", "-echo=127.0.0.1:0", "-grpc=127.0.0.1:0", "-admin=127.0.0.1:0", "-redis="}, pw)
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
