package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
)

// inProcess is run in this process (so that -race sees the example's
// code), its output kept line by line.
type inProcess struct {
	stop  context.CancelFunc // ends run's context, as a first signal does
	done  chan error         // run's error, once it returned and its output is read
	admin chan string        // the admin address, once it listens (web roles)

	mu    sync.Mutex
	lines []string
}

func startInProcess(t *testing.T, args ...string) *inProcess {
	t.Helper()
	ctx, stop := context.WithCancel(t.Context())
	p := &inProcess{stop: stop, done: make(chan error, 1), admin: make(chan string, 1)}
	pr, pw := io.Pipe()
	ran := make(chan error, 1)
	go func() {
		err := run(ctx, newForcedStop(), append([]string{"-summary=1s"}, args...), pw)
		pw.Close()
		ran <- err
	}()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				p.admin <- m[4]
			}
		}
		p.done <- <-ran
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-p.done:
		case <-time.After(time.Minute):
			t.Error("run did not return within a minute of its context's end")
		}
		if t.Failed() {
			t.Logf("output of %v:\n%s", args, p.output())
		}
	})
	return p
}

func (p *inProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// end ends run's context and returns its error and output; a minute at
// most.
func (p *inProcess) end(t *testing.T) (string, error) {
	t.Helper()
	p.stop()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		return p.output(), err
	case <-time.After(time.Minute):
		t.Fatal("run did not return within a minute of its context's end")
		return "", nil
	}
}

var (
	workerFinal = regexp.MustCompile(`(?m)^final  worker orders sent=(\d+) `)
	webFinal    = regexp.MustCompile(`(?m)^final  requests .* \| orders placed=(\d+) sent=(\d+) `)
)

// TestWorkerRunsTheWebsOrders runs a web process that lends no time
// (-steal=false) and a worker (-role=worker) on one redis-server: the
// orders placed on the web process, and the seeded ones left in a
// crashed worker's leases, are all sent, by the worker; the worker
// carries the jobs too, on its pace timer (expired sessions evicted, the
// sales report written on its schedule); on its context's end it returns
// nil, and orders placed after it stopped wait, pending, with nothing
// left leased.
func TestWorkerRunsTheWebsOrders(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	web := startInProcess(t, "-http=127.0.0.1:0", "-echo=127.0.0.1:0", "-grpc=127.0.0.1:0", "-admin=127.0.0.1:0",
		"-redis="+srv.URL(), "-traffic=false", "-steal=false")
	var base string
	select {
	case <-web.admin:
		m := regexp.MustCompile(`(?m)^listening http=(\S+) `).FindStringSubmatch(web.output())
		base = "http://" + m[1]
	case err := <-web.done:
		t.Fatalf("the web process returned before listening: %v\n%s", err, web.output())
	}
	if !strings.Contains(web.output(), "-steal=false") {
		t.Errorf("the web process does not say that it runs no job:\n%s", web.output())
	}
	worker := startInProcess(t, "-role=worker", "-redis="+srv.URL())

	client := &http.Client{Transport: &http.Transport{}}
	defer client.Transport.(*http.Transport).CloseIdleConnections()
	place := func(i int) string {
		t.Helper()
		resp, body := httpDo(t, client, http.MethodPost, base+"/orders", fmt.Sprintf(`{"customer":"buyer-%02d","item_id":%d,"quantity":1}`, i, i))
		var placed orderResponse
		if err := json.Unmarshal(body, &placed); err != nil || resp.StatusCode != http.StatusAccepted || placed.ID == "" {
			t.Fatalf("POST /orders: %s %s (%v), want 202 and an id", resp.Status, body, err)
		}
		return placed.ID
	}
	const orders = 20
	ids := make([]string, orders)
	for i := range ids {
		ids[i] = place(i)
	}
	eventually(t, "every order placed on the web process is sent", func(context.Context) error {
		for _, id := range ids {
			_, body := httpDo(t, client, http.MethodGet, base+"/orders/"+id, "")
			var st orderResponse
			if err := json.Unmarshal(body, &st); err != nil || st.Status != sentStatus {
				return fmt.Errorf("order %s: %s (%v)", id, body, err)
			}
		}
		return nil
	})
	eventually(t, "the worker sent the seeded orders and carried the jobs", func(ctx context.Context) error {
		if err := seededSent(ctx, rdb); err != nil {
			return err
		}
		members, err := rdb.ZRange(ctx, "{"+sessionsKey+"}:expiry", 0, -1).Result()
		if err != nil {
			return err
		}
		for _, m := range members {
			if strings.HasPrefix(m, expiredField) {
				return fmt.Errorf("expired session %q is not evicted yet", m)
			}
		}
		if n, err := rdb.Exists(ctx, reportKey).Result(); err != nil || n != 1 {
			return fmt.Errorf("no sales report at %s yet (%v)", reportKey, err)
		}
		return nil
	})

	out, err := worker.end(t)
	if err != nil {
		t.Fatalf("the worker after its context ended: %v, want nil\n%s", err, out)
	}
	m := workerFinal.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no final summary of the worker:\n%s", out)
	}
	if sent, _ := strconv.Atoi(m[1]); sent < orders+seedStale {
		t.Errorf("the worker sent %d confirmations, want at least %d (%d placed, %d seeded)", sent, orders+seedStale, orders, seedStale)
	}
	if !strings.Contains(out, "worker: stopped") {
		t.Errorf("the worker does not log its stop:\n%s", out)
	}

	// With the worker gone, nothing runs the orders: the web process
	// lends no time.
	late := place(orders)
	// The status waits up to 2s for the chain to end: a web process that
	// stole would have started it long before.
	if resp, body := httpDo(t, client, http.MethodGet, base+"/orders/"+late, ""); resp.StatusCode != http.StatusAccepted ||
		!strings.Contains(string(body), `"status":"pending","step":1,`) {
		t.Errorf("order %s placed after the worker stopped: %s %s, want 202, pending at step 1", late, resp.Status, body)
	}
	q, err := queue.New(rdb, ordersQueue, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := q.Depth(t.Context()); err != nil || st.Leased != 0 || st.Pending == 0 {
		t.Errorf("after the worker stopped: depth %+v (%v), want nothing leased, the late order pending", st, err)
	}
	out, err = web.end(t)
	if err != nil {
		t.Fatalf("the web process after its context ended: %v\n%s", err, out)
	}
	if m := webFinal.FindStringSubmatch(out); m == nil || m[1] != strconv.Itoa(orders+1) || m[2] != "0" {
		t.Errorf("the web process's final summary: %q, want %d orders placed and none sent by it\n%s", m, orders+1, out)
	}
}

// TestWorkerRole: -role and -steal as parsed, and a worker refused on the
// embedded Redis, which no web process shares.
func TestWorkerRole(t *testing.T) {
	t.Parallel()
	o, err := parseFlags(nil, io.Discard)
	if err != nil || o.role != roleWeb || !o.steal {
		t.Errorf("defaults: role %q, steal %t (%v), want web, true", o.role, o.steal, err)
	}
	for _, args := range [][]string{{"-role=worker", "-redis="}, {"-role=worker", "-redis=", "-redis-addrs="}} {
		_, err := parseFlags(args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "REDIS_URL") || !strings.Contains(err.Error(), "-role=both") {
			t.Errorf("parseFlags(%q): %v, want an error saying to set REDIS_URL, or to run -role=both", args, err)
		}
	}
	o, err = parseFlags([]string{"-role=worker", "-redis=redis://127.0.0.1:1", "-admin="}, io.Discard)
	if err != nil || o.role != roleWorker {
		t.Errorf("-role=worker with a Redis and no admin port: role %q, %v; want worker, no error", o.role, err)
	}
	if _, err := parseFlags([]string{"-role=cron"}, io.Discard); err == nil || !strings.Contains(err.Error(), "web, worker or both") {
		t.Errorf("-role=cron: %v, want an error naming the roles", err)
	}
	_, err = runOutput(t, "-role=worker", "-redis=", "-redis-addrs=")
	if err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("run -role=worker on the embedded Redis: %v, want the refusal", err)
	}
}

// TestBothRoleShares runs -role=both on the embedded Redis with its
// traffic: the servers steal and a worker in the same process serves the
// same queue; on its context's end run returns nil, and the final summary
// counts the confirmations of both, the worker's among them.
func TestBothRoleShares(t *testing.T) {
	t.Parallel()
	p := startInProcess(t, "-role=both", "-http=127.0.0.1:0", "-echo=127.0.0.1:0", "-grpc=127.0.0.1:0", "-admin=127.0.0.1:0", "-redis=", "-redis-addrs=")
	sent := regexp.MustCompile(`(?m)^t=\S+ +requests .* \| orders placed=\d+ sent=(\d+) \(stolen=\d+ worker=(\d+)\)`)
	eventually(t, "the worker beside the servers sends orders", func(context.Context) error {
		for _, m := range sent.FindAllStringSubmatch(p.output(), -1) {
			if total, _ := strconv.Atoi(m[1]); total >= seedStale && m[2] != "0" {
				return nil
			}
		}
		return errors.New("no summary yet with the seeded orders sent and the worker's share")
	})
	out, err := p.end(t)
	if err != nil {
		t.Fatalf("run -role=both after its context ended: %v, want nil\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^final  requests .* failed=0 \| orders placed=\d+ sent=\d+ \(stolen=\d+ worker=[1-9]\d*\)`).MatchString(out) {
		t.Errorf("the final summary does not show the worker's share, or requests failed:\n%s", out)
	}
	if !strings.Contains(out, "worker: stopped") {
		t.Errorf("the worker does not log its stop:\n%s", out)
	}
}
