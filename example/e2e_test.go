package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/example/catalogpb"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/telemetry"
)

// TestExampleEndToEnd runs the built example as a process, drives each of
// its stacks with a real client while its own traffic runs, checks from
// the dashboard, the metrics and (on a real Redis) Redis itself that every
// job did its work, then stops it with SIGTERM.
func TestExampleEndToEnd(t *testing.T) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		p := startExample(t, nil)
		checkStacks(t, p)
		checkJobsDidTheirWork(t, p.admin)
		checkStop(t, p)
	})
	t.Run("redis-server", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		p := startExample(t, []string{"REDIS_URL=" + srv.URL()})
		if !strings.Contains(p.log(), "redis: server at "+srv.Addr()) {
			t.Errorf("the example does not say it uses the redis-server at %s:\n%s", srv.Addr(), p.log())
		}
		checkStacks(t, p)
		checkJobsDidTheirWork(t, p.admin)
		checkRedis(t, srv.Client(t))
		checkStop(t, p)
	})
	t.Run("redis-cluster", func(t *testing.T) {
		t.Parallel()
		cluster := redistest.StartCluster(t)
		p := startExample(t, []string{"REDIS_ADDRS=" + strings.Join(cluster.Addrs(), ",")})
		if !strings.Contains(p.log(), "redis: cluster at ") {
			t.Errorf("the example does not say it uses a cluster:\n%s", p.log())
		}
		checkStacks(t, p)
		checkJobsDidTheirWork(t, p.admin)
		checkRedis(t, cluster.Client(t))
		checkStop(t, p)
	})
}

// checkStacks reads an item twice (a miss, then a hit), places an order
// and waits for its confirmation, on each stack; and lists the gRPC
// services by reflection. The traffic generator reads items below 100
// only, so each stack's item starts cold.
func checkStacks(t *testing.T, p *process) {
	ctx := t.Context()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	for i, base := range []string{"http://" + p.http, "http://" + p.echo} {
		itemID := 500 + i
		for _, want := range []string{"MISS", "HIT"} {
			resp, body := httpDo(t, client, http.MethodGet, fmt.Sprintf("%s/items/%d", base, itemID), "")
			var it item
			if err := json.Unmarshal(body, &it); err != nil || resp.StatusCode != http.StatusOK || it.ID != itemID || it.Cached != (want == "HIT") {
				t.Errorf("GET %s/items/%d: %s %s (%v), want 200 and item %d, cached %t", base, itemID, resp.Status, body, err, itemID, want == "HIT")
			}
			if got := resp.Header.Get("X-Cache"); got != want {
				t.Errorf("GET %s/items/%d: X-Cache %q, want %q", base, itemID, got, want)
			}
		}
		if resp, body := httpDo(t, client, http.MethodGet, base+"/orders/nope", ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s/orders/nope: %s %s, want 404", base, resp.Status, body)
		}
		if resp, body := httpDo(t, client, http.MethodGet, base+"/items/nope", ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s/items/nope: %s %s, want 404", base, resp.Status, body)
		}
		if resp, body := httpDo(t, client, http.MethodPost, base+"/orders", `{"customer":"","item_id":1,"quantity":1}`); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s/orders without a customer: %s %s, want 400", base, resp.Status, body)
		}
		if resp, body := httpDo(t, client, http.MethodPost, base+"/orders", `{"customer":"x","item_id":1,"quantity":1} {}`); resp.StatusCode != http.StatusBadRequest ||
			!bytes.Contains(body, []byte("data after the JSON object")) {
			t.Errorf("POST %s/orders with a second object: %s %s, want 400 naming the data after it", base, resp.Status, body)
		}
		big := fmt.Sprintf(`{"customer":%q,"item_id":1,"quantity":1}`, strings.Repeat("x", maxOrderBytes))
		if resp, body := httpDo(t, client, http.MethodPost, base+"/orders", big); resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s/orders of %d bytes: %s %s, want 413", base, len(big), resp.Status, body)
		}
		for _, path := range []string{"/debug/worksteal", "/metrics"} {
			if resp, _ := httpDo(t, client, http.MethodGet, base+path, ""); resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s%s: %s, want 404: the admin pages are on the admin port only", base, path, resp.Status)
			}
		}
		customer := fmt.Sprintf("tester-%d", i)
		resp, body := httpDo(t, client, http.MethodPost, base+"/orders", fmt.Sprintf(`{"customer":%q,"item_id":3,"quantity":2}`, customer))
		var placed orderResponse
		if err := json.Unmarshal(body, &placed); err != nil || resp.StatusCode != http.StatusAccepted || placed.ID == "" ||
			placed.Step != 1 || placed.Steps != 3 || placed.Task != reserveTask.Type() {
			t.Fatalf("POST %s/orders: %s %s (%v), want 202, an id, step 1 of 3 (%s)", base, resp.Status, body, err, reserveTask.Type())
		}
		eventually(t, "the order placed on "+base+" is sent", func(context.Context) error {
			resp, body := httpDo(t, client, http.MethodGet, base+"/orders/"+placed.ID, "")
			var st orderResponse
			if err := json.Unmarshal(body, &st); err != nil {
				return fmt.Errorf("%s %s: %v", resp.Status, body, err)
			}
			if st.Steps != 3 || st.Step < 1 || st.Step > 3 || st.Task != orderSteps[st.Step-1] {
				t.Errorf("GET %s/orders/%s: %s, want a step of 3 and its task type", base, placed.ID, body)
			}
			if resp.StatusCode != http.StatusOK || st.Status != sentStatus {
				return fmt.Errorf("status %s %+v", resp.Status, st)
			}
			if st.Step != 3 || st.Task != confirmTask.Type() {
				t.Errorf("GET %s/orders/%s: %s, want step 3 (%s) once sent", base, placed.ID, body, confirmTask.Type())
			}
			if !strings.Contains(st.Confirmation, "Dear "+customer+", your order of 2 x item 3") {
				t.Errorf("confirmation %q, want one to %s for 2 x item 3", st.Confirmation, customer)
			}
			return nil
		})
	}

	conn, err := grpc.NewClient(p.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	catalog := catalogpb.NewCatalogClient(conn)
	for _, cached := range []bool{false, true} {
		it, err := catalog.GetItem(ctx, &catalogpb.GetItemRequest{Id: 502})
		if err != nil || it.GetId() != 502 || it.GetCached() != cached || it.GetName() != "item 502" {
			t.Errorf("GetItem 502: %v, %v; want item 502, cached %t", it, err, cached)
		}
	}
	if _, err := catalog.OrderStatus(ctx, &catalogpb.OrderStatusRequest{OrderId: "nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("OrderStatus of nope: %v, want NotFound", err)
	}
	if _, err := catalog.GetItem(ctx, &catalogpb.GetItemRequest{Id: -1}); status.Code(err) != codes.NotFound {
		t.Errorf("GetItem -1: %v, want NotFound", err)
	}
	if _, err := catalog.PlaceOrder(ctx, &catalogpb.PlaceOrderRequest{Customer: "x", ItemId: 1}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("PlaceOrder of quantity 0: %v, want InvalidArgument", err)
	}
	placed, err := catalog.PlaceOrder(ctx, &catalogpb.PlaceOrderRequest{Customer: "tester-grpc", ItemId: 4, Quantity: 1})
	if err != nil || placed.GetOrderId() == "" {
		t.Fatalf("PlaceOrder: %v, %v", placed, err)
	}
	eventually(t, "the order placed on gRPC is sent", func(ctx context.Context) error {
		st, err := catalog.OrderStatus(ctx, &catalogpb.OrderStatusRequest{OrderId: placed.GetOrderId()})
		if err != nil || st.GetStatus() != sentStatus {
			return fmt.Errorf("%v, %v", st, err)
		}
		if st.GetStep() != 3 || st.GetSteps() != 3 || st.GetTask() != confirmTask.Type() || st.GetCause() != "" {
			t.Errorf("OrderStatus of a sent order: %v, want step 3 of 3 (%s) and no cause", st, confirmTask.Type())
		}
		if !strings.Contains(st.GetConfirmation(), "Dear tester-grpc") {
			t.Errorf("confirmation %q, want one to tester-grpc", st.GetConfirmation())
		}
		return nil
	})

	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	reply, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	stream.CloseSend()
	var services []string
	for _, s := range reply.GetListServicesResponse().GetService() {
		services = append(services, s.GetName())
	}
	if !strings.Contains(strings.Join(services, " "), "worksteal.example.catalog.v1.Catalog") {
		t.Errorf("reflection lists %v, want worksteal.example.catalog.v1.Catalog among them", services)
	}
}

func httpDo(t *testing.T, client *http.Client, method, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp, b
}

// checkJobsDidTheirWork waits until the dashboard on the admin port shows
// that each job ran and did its share of the seeded work, then checks the
// Prometheus metrics there.
func checkJobsDidTheirWork(t *testing.T, adminAddr string) {
	client := &http.Client{Transport: &http.Transport{}}
	defer client.Transport.(*http.Transport).CloseIdleConnections()
	// At least: the three steps of the seeded orders (their stale leases
	// handed back, two first sends retried) and of the tests' done;
	// exactly the seeded expired sessions evicted (the live ones last
	// minutes); some popular items refreshed.
	want := map[string]func(items uint64) bool{
		"tasks.orders":    func(n uint64) bool { return n >= uint64(len(orderSteps))*(seedStale+3) }, // a step is an item
		"evict.sessions":  func(n uint64) bool { return n == seedExpired },
		"refresh-popular": func(n uint64) bool { return n > 0 },
		"depth.orders":    func(n uint64) bool { return n == 0 }, // a reading is no item
		reportJob:         func(n uint64) bool { return n > 0 },  // a tick's task enqueued
		trimJob:           func(uint64) bool { return true },     // nothing to trim is fine
	}
	reported := map[string]bool{} // a job's errors, said once
	eventually(t, "every job did its work", func(context.Context) error {
		_, body := httpDo(t, client, http.MethodGet, "http://"+adminAddr+"/debug/worksteal?format=json", "")
		doc, err := decodeDashboard(body)
		if err != nil {
			return err
		}
		if len(doc.Jobs) != len(want) {
			return fmt.Errorf("jobs %+v, want %d", doc.Jobs, len(want))
		}
		if err := checkGauges(doc); err != nil {
			return err
		}
		if err := checkTasks(doc); err != nil {
			return err
		}
		for _, j := range doc.Jobs {
			ok := want[j.Name]
			if ok == nil {
				t.Fatalf("unexpected job %q on the dashboard", j.Name)
			}
			if j.Ran == 0 || !ok(j.Items) {
				return fmt.Errorf("job %s ran %d slices, items %d", j.Name, j.Ran, j.Items)
			}
			if j.Errors+j.Panics != 0 && !reported[j.Name] {
				reported[j.Name] = true
				var causes []string
				for _, r := range doc.Recent {
					if r.Job == j.Name && r.Error != "" {
						causes = append(causes, r.Error)
					}
				}
				t.Errorf("job %s: %d errors, %d panics; recent: %q", j.Name, j.Errors, j.Panics, causes)
			}
		}
		return nil
	})

	_, body := httpDo(t, client, http.MethodGet, "http://"+adminAddr+"/metrics", "")
	metrics := promSums(body)
	for _, name := range []string{
		promName(telemetry.MetricRecruitments) + "_total",
		promName(telemetry.MetricItems) + "_total",
		promName(telemetry.MetricSliceDuration) + "_seconds_count",
		promName(telemetry.MetricTaskAttempts) + "_total",
	} {
		if metrics[name] <= 0 {
			t.Errorf("/metrics: %s sums to %v, want > 0", name, metrics[name])
		}
	}
	// Each scheduled job's next tick, as the Grafana board's schedule
	// panels read it.
	checkNextTicks(t, adminAddr)
}

// decodeDashboard decodes the dashboard's JSON.
func decodeDashboard(body []byte) (dashboard.Document, error) {
	var doc dashboard.Document
	if err := json.Unmarshal(body, &doc); err != nil {
		return doc, fmt.Errorf("dashboard JSON: %v: %s", err, body)
	}
	return doc, nil
}

// checkGauges says whether the dashboard's latest sample has read both
// gauges, and whether its recent recruitments carry trace ids.
func checkGauges(doc dashboard.Document) error {
	if strings.Join(doc.Gauges, ",") != "queue depth,sessions" {
		return fmt.Errorf("gauges %v, want queue depth and sessions", doc.Gauges)
	}
	if len(doc.Samples) == 0 {
		return errors.New("no samples yet")
	}
	last := doc.Samples[len(doc.Samples)-1]
	if last.Gauges["queue depth"] == nil || last.Gauges["sessions"] == nil || *last.Gauges["sessions"] < seedLive {
		return fmt.Errorf("latest sample's gauges %v, want both read, at least %d sessions", last.Gauges, seedLive)
	}
	if len(doc.Recent) == 0 || doc.Recent[0].TraceID == "" {
		return fmt.Errorf("recent recruitments %+v, want some, with trace ids", doc.Recent)
	}
	return nil
}

// checkTasks says whether the dashboard shows the orders' three task
// types, each with its steps of the seeded orders done, and some
// confirmations retried (every tenth order's first send fails); and the
// report task, with a tick's report done.
func checkTasks(doc dashboard.Document) error {
	if len(doc.Tasks) != len(orderSteps)+1 {
		return fmt.Errorf("tasks %+v, want %v and %s", doc.Tasks, orderSteps, reportTask.Type())
	}
	for _, tk := range doc.Tasks {
		if tk.Type == reportTask.Type() {
			if tk.Done == 0 || tk.Dead != 0 {
				return fmt.Errorf("task %+v, want a report done and none dead", tk)
			}
			continue
		}
		if tk.Done < seedStale || tk.Dead != 0 {
			return fmt.Errorf("task %+v, want at least %d done and none dead", tk, seedStale)
		}
		if tk.Type == confirmTask.Type() && tk.Retried == 0 {
			return fmt.Errorf("task %+v, want some retried", tk)
		}
	}
	return nil
}

// promName is a metric's name as the Prometheus exporter writes it.
func promName(otelName string) string { return strings.ReplaceAll(otelName, ".", "_") }

// promSums sums the samples of each metric in a Prometheus exposition.
func promSums(body []byte) map[string]float64 {
	sums := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		name, _, _ := strings.Cut(line[:i], "{")
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			sums[name] += v
		}
	}
	return sums
}

// checkRedis reads the example's state in Redis: the queue kept up with
// (all the seeded orders sent, none dead), the expired sessions gone.
func checkRedis(t *testing.T, rdb redis.UniversalClient) {
	q, err := queue.New(rdb, ordersQueue, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// The generator keeps placing orders, each a chain of three steps
	// whose next step is pending until the tasks job's next slice, and a
	// tenth of which wait in the delayed set for their retry: kept up is
	// nothing dead, no step pending for long, and every seeded order sent,
	// retries included.
	eventually(t, "the queue keeps up and the seeded orders are sent", func(ctx context.Context) error {
		st, err := q.Depth(ctx)
		if err != nil || st.Dead != 0 || st.OldestPending > 5*time.Second {
			return fmt.Errorf("queue stats %+v, %v", st, err)
		}
		return seededSent(ctx, rdb)
	})

	values, expiry := "{"+sessionsKey+"}:values", "{"+sessionsKey+"}:expiry"
	fields, err := rdb.HKeys(t.Context(), values).Result()
	if err != nil {
		t.Fatal(err)
	}
	members, err := rdb.ZRange(t.Context(), expiry, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, f := range append(fields, members...) {
		if strings.HasPrefix(f, expiredField) {
			t.Errorf("expired session %q is still in Redis", f)
		}
		if strings.HasPrefix(f, "customer-") {
			live++
		}
	}
	if live != 2*seedLive {
		t.Errorf("%d live seeded sessions in the hash and its expiry set, want %d in each", live, seedLive)
	}
}

// checkStop sends SIGTERM and checks the exit: code 0 and the final
// summary last.
func checkStop(t *testing.T, p *process) {
	code, out := p.stop()
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if len(out) < 2 || !strings.HasPrefix(out[len(out)-2], "final  requests http=") ||
		!strings.Contains(out[len(out)-1], "tasks.orders=") {
		t.Errorf("the output does not end with the final summary:\n%s", strings.Join(out, "\n"))
	}
}

// seededSent says which seeded stale order has no confirmation sent yet;
// nil once all have.
func seededSent(ctx context.Context, rdb redis.UniversalClient) error {
	sent, err := rdb.HVals(ctx, sentKey).Result()
	if err != nil {
		return err
	}
	all := strings.Join(sent, "\n")
	for i := range seedStale {
		if !strings.Contains(all, fmt.Sprintf("Dear seed-%02d,", i)) {
			return fmt.Errorf("the seeded order of seed-%02d is not sent yet", i)
		}
	}
	return nil
}
