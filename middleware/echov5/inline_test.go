package stealecho_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealecho "github.com/worksteal/worksteal/middleware/echov5"
)

// client gives up, so that a response held back by its slice fails the
// test instead of hanging it.
var client = &http.Client{Timeout: 5 * time.Second}

// TestInlineFlushesBeforeTheSlice: in inline mode the client has a
// response with a Content-Length in full while the slice still runs; a
// chunked one has its body, and its end follows the slice.
func TestInlineFlushesBeforeTheSlice(t *testing.T) {
	t.Parallel()
	rig, srv, release := stealtest.ServeInline(t, func(rig *stealtest.Rig) http.Handler {
		e := echo.New()
		e.Use(stealecho.Middleware(rig.Rec))
		e.GET("/:shape", func(c *echo.Context) error {
			marked(c)
			if c.Param("shape") == "sized" {
				c.Response().Header().Set(echo.HeaderContentLength, "5")
			}
			return c.String(http.StatusOK, "hello")
		})
		return e
	})
	rig.Draw()

	resp, err := client.Get(srv.URL + "/sized")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body) // completes while the slice is blocked
	resp.Body.Close()
	if err != nil || string(body) != "hello" || resp.ContentLength != 5 {
		t.Fatalf("sized body %q (Content-Length %d), %v", body, resp.ContentLength, err)
	}
	rig.NextRun(t)
	release <- struct{}{}
	rig.Settle(t)
	rig.ForgetCoolOffs()

	resp, err = client.Get(srv.URL + "/chunked")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ContentLength != -1 {
		t.Fatalf("Content-Length %d, want a chunked response", resp.ContentLength)
	}
	first := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "hello" {
		t.Fatalf("chunked body %q, %v before the slice ended", first, err)
	}
	rig.NextRun(t)
	ended := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); ended <- err }()
	select {
	case err := <-ended:
		t.Fatalf("the chunked response ended (%v) while its inline slice still ran", err)
	case <-time.After(20 * time.Millisecond):
	}
	release <- struct{}{}
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
}

// TestInlineErrorResponseFollowsTheSlice: a fast exit returned as an error
// is written by echo's error handler after the middleware, so in inline
// mode the client gets it once the slice has ended, and gets it intact.
func TestInlineErrorResponseFollowsTheSlice(t *testing.T) {
	t.Parallel()
	rig, srv, release := stealtest.ServeInline(t, func(rig *stealtest.Rig) http.Handler {
		return newEcho(stealecho.Middleware(rig.Rec))
	})
	without := stealtest.Serve(t, newEcho())
	want := stealtest.Get(t, without.URL+"/same-error", nil)
	rig.Draw()

	got := make(chan string, 1)
	go func() {
		resp, err := client.Get(srv.URL + "/same-error")
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		resp.Header.Del("Date")
		raw, err := httputil.DumpResponse(resp, true)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(raw)
	}()
	rig.NextRun(t)
	select {
	case raw := <-got:
		t.Fatalf("the error response arrived while its inline slice still ran:\n%s", raw)
	case <-time.After(20 * time.Millisecond):
	}
	release <- struct{}{}
	if raw := <-got; raw != want {
		t.Fatalf("after the slice the response is\n%s\nwant\n%s", raw, want)
	}
}

// TestInlineWithoutAFlusher: a ResponseWriter that cannot flush (echo's
// own Response.Flush panics on one) still gets its response and its slice.
func TestInlineWithoutAFlusher(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, true)
	e := newEcho(stealecho.Middleware(rig.Rec))
	rig.Draw()
	w := &discard{h: http.Header{}}
	e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/hit", nil))
	if got := w.h.Get("X-Cache"); got != "HIT" {
		t.Fatalf("X-Cache %q, want the handler's HIT", got)
	}
	rig.NextRun(t)
	rig.Settle(t)
	if n := rig.Started(); n != 1 {
		t.Fatalf("%d slices ran, want 1", n)
	}
}
