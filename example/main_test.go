package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/recruiter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runOutput runs run with args and returns its output lines and error;
// onListen, if set, is called with the server's base URL while it serves.
func runOutput(t *testing.T, args []string, onListen func(baseURL string)) ([]string, error) {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(t.Context(), args, pw)
		pw.Close()
		done <- err
	}()
	var lines []string
	var probing sync.WaitGroup
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if baseURL, ok := strings.CutPrefix(sc.Text(), "listening on "); ok && onListen != nil {
			// Keep draining the output while onListen talks to the server.
			probing.Go(func() { onListen(baseURL) })
		}
	}
	probing.Wait()
	return lines, <-done
}

func TestRunEvictsExpiredSessionsFromCacheHits(t *testing.T) {
	t.Parallel()
	lines, err := runOutput(t, []string{"-addr=127.0.0.1:0", "-duration=3s", "-redis="}, func(baseURL string) {
		probeServer(t, baseURL)
	})
	if err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, strings.Join(lines, "\n"))
	}
	final := lines[len(lines)-1]
	m := regexp.MustCompile(`^final requests=(\d+) hits=(\d+) failed=(\d+)` +
		` \| evict-sessions ran=(\d+) skipped=\d+ failed=(\d+) timeouts=\d+ items=(\d+)` +
		` \| refresh-popular ran=(\d+) skipped=\d+ failed=(\d+) timeouts=\d+ items=(\d+)` +
		` \| sessions=(\d+) expired=(\d+)$`).FindStringSubmatch(final)
	if m == nil {
		t.Fatalf("last line is not the final summary: %q\noutput:\n%s", final, strings.Join(lines, "\n"))
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	requests, hits := n(1), n(2)
	// 3s at ~200 req/s; a loaded machine under -race may serve fewer.
	if requests < 150 || hits*2 < requests {
		t.Errorf("requests=%d hits=%d: want at least 150 requests, mostly cache hits", requests, hits)
	}
	if failed := n(3); failed != 0 {
		t.Errorf("traffic failed=%d, want 0", failed)
	}
	// Half of the 500 seeded sessions had expired; the live ones expire
	// a minute after the start at the earliest, so exactly 250 go.
	if ran, items := n(4), n(6); ran < 3 || items != sessionsSeed/2 {
		t.Errorf("evict-sessions ran=%d items=%d, want at least 3 slices of at most %d removing %d", ran, items, sessionsBatch, sessionsSeed/2)
	}
	if sessions, expired := n(10), n(11); sessions != sessionsSeed/2 || expired != 0 {
		t.Errorf("sessions=%d expired=%d, want %d and 0", sessions, expired, sessionsSeed/2)
	}
	if ran, items := n(7), n(9); ran < 1 || items < ran || items > ran*popularTop {
		t.Errorf("refresh-popular ran=%d items=%d, want at least one slice of at most %d items", ran, items, popularTop)
	}
	if f1, f2 := n(5), n(8); f1+f2 != 0 {
		t.Errorf("failed slices: evict-sessions %d, refresh-popular %d; want none\noutput:\n%s", f1, f2, strings.Join(lines, "\n"))
	}
}

// probeServer checks the endpoints while run serves.
func probeServer(t *testing.T, baseURL string) {
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	get := func(path string) (*http.Response, []byte, bool) {
		resp, err := client.Get(baseURL + path)
		if err != nil {
			t.Errorf("GET %s: %v", path, err)
			return nil, nil, false
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Errorf("GET %s: read body: %v", path, err)
			return nil, nil, false
		}
		return resp, body, true
	}

	// The traffic reads ids below trafficItems only, so this one starts cold.
	for _, want := range []string{"MISS", "HIT"} {
		resp, body, ok := get("/items/500")
		if !ok {
			return
		}
		var item struct{ ID int }
		if err := json.Unmarshal(body, &item); err != nil || resp.StatusCode != http.StatusOK || item.ID != 500 {
			t.Errorf("GET /items/500: status %d, body %s, err %v; want 200 and id 500", resp.StatusCode, body, err)
		}
		if got := resp.Header.Get("X-Cache"); got != want {
			t.Errorf("GET /items/500: X-Cache %q, want %q", got, want)
		}
	}
	if resp, _, ok := get("/items/nope"); ok && resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /items/nope: status %d, want 404", resp.StatusCode)
	}

	_, body, ok := get("/debug/worksteal")
	if !ok {
		return
	}
	var stats recruiter.Stats
	if err := json.Unmarshal(body, &stats); err != nil {
		t.Errorf("GET /debug/worksteal: %v", err)
		return
	}
	if len(stats.Jobs) != 2 || stats.Jobs[0].Name != "evict-sessions" || stats.Jobs[0].Rate != 0.05 ||
		stats.Jobs[1].Name != "refresh-popular" || stats.Jobs[1].Every != 2*time.Second {
		t.Errorf("GET /debug/worksteal: jobs %+v, want evict-sessions at rate 0.05 and refresh-popular every 2s", stats.Jobs)
	}
}

func TestRunReportsBusyPort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = runOutput(t, []string{"-addr=" + ln.Addr().String(), "-traffic=false", "-redis="}, nil)
	if err == nil || !strings.Contains(err.Error(), "listen on "+ln.Addr().String()) {
		t.Fatalf("run on a busy port: error %v, want one naming the address", err)
	}
}
