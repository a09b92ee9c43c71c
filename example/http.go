package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	stealhttp "github.com/worksteal/worksteal/middleware/http"
)

// httpRoutes is the shop on net/http. otelhttp wraps stealhttp, so that a
// request's context carries its span when stealhttp draws, and the
// recruitment span links to it.
func (a *app) httpRoutes(tel *otelSetup) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", a.httpGetItem)
	mux.HandleFunc("POST /orders", a.httpPlaceOrder)
	mux.HandleFunc("GET /orders/{id}", a.httpOrderStatus)
	steal := stealhttp.Middleware(a.rec)
	return otelhttp.NewHandler(steal(mux), "http",
		otelhttp.WithTracerProvider(tel.tracers),
		otelhttp.WithMeterProvider(tel.meters),
		otelhttp.WithPropagators(tel.propagators),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if _, pattern := mux.Handler(r); pattern != "" {
				return pattern // "GET /items/{id}": one span name per route, not per id
			}
			return r.Method
		}),
	)
}

func (a *app) httpGetItem(w http.ResponseWriter, r *http.Request) {
	a.count.http.Add(1)
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		writeError(w, fmt.Errorf("%w: %q", errNoSuchItem, r.PathValue("id")))
		return
	}
	it, err := a.getItem(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("X-Cache", cacheHeader(it.Cached))
	writeJSON(w, http.StatusOK, it)
}

func (a *app) httpPlaceOrder(w http.ResponseWriter, r *http.Request) {
	a.count.http.Add(1)
	o, err := decodeOrder(w, r.Body)
	if err != nil {
		writeError(w, err)
		return
	}
	id, err := a.placeOrder(r.Context(), o)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Location", "/orders/"+id)
	writeJSON(w, http.StatusAccepted, orderResponse{ID: id, Status: waitStatus, Step: 1, Steps: len(orderSteps), Task: orderSteps[0]})
}

func (a *app) httpOrderStatus(w http.ResponseWriter, r *http.Request) {
	a.count.http.Add(1)
	p, err := a.orderStatus(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, statusCode(p.Status), newOrderResponse(r.PathValue("id"), p))
}

// maxOrderBytes bounds an order's JSON body.
const maxOrderBytes = 4096

// errOrderTooLarge is an order's body past maxOrderBytes: 413.
var errOrderTooLarge = fmt.Errorf("order too large: over %d bytes", maxOrderBytes)

// decodeOrder reads an order's JSON body, on net/http and echo: exactly one
// JSON object (white space may follow it, nothing else), of at most
// maxOrderBytes. Its errors wrap errBadOrder or errOrderTooLarge, and
// their messages are one line.
func decodeOrder(w http.ResponseWriter, body io.ReadCloser) (order, error) {
	var o order
	dec := json.NewDecoder(http.MaxBytesReader(w, body, maxOrderBytes))
	err := dec.Decode(&o)
	if err == nil {
		// A second value, or anything but white space, after the order.
		if err = dec.Decode(&struct{}{}); err == io.EOF {
			return o, nil
		} else if err == nil {
			err = errors.New("data after the JSON object")
		}
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return order{}, errOrderTooLarge
	case err == io.EOF:
		return order{}, fmt.Errorf("%w: empty body, want a JSON object", errBadOrder)
	}
	return order{}, fmt.Errorf("%w: %v", errBadOrder, err)
}

// orderResponse is the body of the order routes, on net/http and echo:
// the order's chain at step Step of Steps, whose task type is Task.
type orderResponse struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	Step         int    `json:"step"`
	Steps        int    `json:"steps"`
	Task         string `json:"task"`
	Confirmation string `json:"confirmation,omitempty"` // once sent
	Cause        string `json:"cause,omitempty"`        // once failed
}

func newOrderResponse(id string, p orderProgress) orderResponse {
	return orderResponse{ID: id, Status: p.Status, Step: p.Step, Steps: p.Steps, Task: p.Task,
		Confirmation: p.Confirmation, Cause: p.Cause}
}

// statusCode is 202 Accepted while the confirmation is pending, 200 once
// the order's fate is known.
func statusCode(status string) int {
	if status == waitStatus {
		return http.StatusAccepted
	}
	return http.StatusOK
}

func cacheHeader(cached bool) string {
	if cached {
		return "HIT"
	}
	return "MISS"
}

// errorCode maps the shop's errors to HTTP statuses, on net/http and echo.
func errorCode(err error) int {
	switch {
	case errors.Is(err, errNoSuchItem), errors.Is(err, errNoSuchOrder):
		return http.StatusNotFound
	case errors.Is(err, errBadOrder):
		return http.StatusBadRequest
	case errors.Is(err, errOrderTooLarge):
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusServiceUnavailable
}

func writeError(w http.ResponseWriter, err error) {
	writeJSON(w, errorCode(err), map[string]string{"error": err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
