package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/worksteal/worksteal/example/catalogpb"
)

const (
	trafficPerStack = 50  // requests per second to each stack
	trafficWorkers  = 2   // per stack
	trafficItems    = 100 // reads go to the first items of the catalog only
	orderShare      = 0.04
	statusShare     = 0.04
	shoppers        = 500
)

// shop is one stack as a client sees it.
type shop interface {
	getItem(ctx context.Context, id int) error
	placeOrder(ctx context.Context, o order) (id string, err error)
	orderStatus(ctx context.Context, id string) error
}

// generateTraffic drives the three stacks until ctx is done, and returns a
// function that waits for its workers to stop. Item ids follow a Zipf law,
// as real catalog reads do, so most reads are cache hits: fast exits that
// lend their time. A few requests place orders and later ask for their
// status, which shows their chains of tasks run by stolen work.
func (a *app) generateTraffic(ctx context.Context, lns *listeners) (wait func()) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = trafficWorkers
	client := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	conn, err := grpc.NewClient(lns.grpc.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil { // only for a malformed target, which an address from a listener is not
		a.logger.Error("traffic: no gRPC client", "err", err)
		return func() {}
	}
	shops := []shop{
		&httpShop{base: "http://" + lns.http.Addr().String(), client: client},
		&httpShop{base: "http://" + lns.echo.Addr().String(), client: client},
		&grpcShop{client: catalogpb.NewCatalogClient(conn)},
	}
	var wg sync.WaitGroup
	for _, s := range shops {
		for range trafficWorkers {
			wg.Go(func() { a.shopper(ctx, s) })
		}
	}
	return func() {
		wg.Wait()
		conn.Close()
		transport.CloseIdleConnections()
	}
}

// shopper is one worker of the generator, on one stack.
func (a *app) shopper(ctx context.Context, s shop) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	zipf := rand.NewZipf(rng, 1.2, 1, trafficItems-1)
	tick := time.NewTicker(trafficWorkers * time.Second / trafficPerStack)
	defer tick.Stop()
	var placed []string // orders whose status is still to be asked
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var err error
		switch roll := rng.Float64(); {
		case roll < orderShare:
			var id string
			o := order{Customer: fmt.Sprintf("shopper-%03d", rng.IntN(shoppers)), ItemID: int(zipf.Uint64()), Quantity: 1 + rng.IntN(3)}
			if id, err = s.placeOrder(rctx, o); err == nil {
				placed = append(placed, id)
			}
		case roll < orderShare+statusShare && len(placed) > 0:
			err = s.orderStatus(rctx, placed[0])
			placed = placed[1:]
		default:
			err = s.getItem(rctx, int(zipf.Uint64()))
		}
		cancel()
		if err != nil && ctx.Err() == nil {
			// The first few at warn level: they are news; the rest count.
			level := slog.LevelDebug
			if a.count.failed.Add(1) <= 3 {
				level = slog.LevelWarn
			}
			a.logger.Log(ctx, level, "traffic: request failed", "err", err)
		}
	}
}

// httpShop is a client of the net/http and the echo stacks alike.
type httpShop struct {
	base   string
	client *http.Client
}

func (h *httpShop) getItem(ctx context.Context, id int) error {
	_, err := h.do(ctx, http.MethodGet, fmt.Sprintf("/items/%d", id), nil, http.StatusOK)
	return err
}

func (h *httpShop) placeOrder(ctx context.Context, o order) (string, error) {
	body, _ := json.Marshal(o)
	resp, err := h.do(ctx, http.MethodPost, "/orders", body, http.StatusAccepted)
	if err != nil {
		return "", err
	}
	var r orderResponse
	if err := json.Unmarshal(resp, &r); err != nil || r.ID == "" {
		return "", fmt.Errorf("POST /orders: no order id in %q", resp)
	}
	return r.ID, nil
}

func (h *httpShop) orderStatus(ctx context.Context, id string) error {
	_, err := h.do(ctx, http.MethodGet, "/orders/"+id, nil, http.StatusOK, http.StatusAccepted)
	return err
}

// do sends a request and returns the body of a response with one of the
// wanted statuses.
func (h *httpShop) do(ctx context.Context, method, path string, body []byte, want ...int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	for _, w := range want {
		if resp.StatusCode == w {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%s %s%s: %s %s", method, h.base, path, resp.Status, bytes.TrimSpace(b))
}

// grpcShop is a client of the gRPC stack.
type grpcShop struct{ client catalogpb.CatalogClient }

func (g *grpcShop) getItem(ctx context.Context, id int) error {
	_, err := g.client.GetItem(ctx, &catalogpb.GetItemRequest{Id: int32(id)})
	return err
}

func (g *grpcShop) placeOrder(ctx context.Context, o order) (string, error) {
	r, err := g.client.PlaceOrder(ctx, &catalogpb.PlaceOrderRequest{Customer: o.Customer, ItemId: int32(o.ItemID), Quantity: int32(o.Quantity)})
	return r.GetOrderId(), err
}

func (g *grpcShop) orderStatus(ctx context.Context, id string) error {
	_, err := g.client.OrderStatus(ctx, &catalogpb.OrderStatusRequest{OrderId: id})
	return err
}
