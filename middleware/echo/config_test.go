package stealecho_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealecho "github.com/worksteal/worksteal/middleware/echo"
)

func TestConfigWithoutRecruiter(t *testing.T) {
	t.Parallel()
	mw, err := stealecho.Config{}.ToMiddleware()
	if mw != nil || err == nil || err.Error() != "stealecho: Config.Recruiter is nil" {
		t.Fatalf("ToMiddleware without a Recruiter: %v, %v; want no middleware and the error naming the field", mw != nil, err)
	}
	for name, build := range map[string]func(){
		"Middleware(nil)":                func() { stealecho.Middleware(nil) },
		"MiddlewareWithConfig(Config{})": func() { stealecho.MiddlewareWithConfig(stealecho.Config{}) },
	} {
		func() {
			defer func() {
				if p, ok := recover().(error); !ok || p.Error() != err.Error() {
					t.Errorf("%s panicked with %v, want %q", name, p, err)
				}
			}()
			build()
		}()
	}
}

func TestDefaultClassifier(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		exit stealecho.Exit
		want bool
	}{
		{stealecho.Exit{Status: 200, Marked: true}, true},
		{stealecho.Exit{Status: 200}, false},
		{stealecho.Exit{Status: 204}, true},
		{stealecho.Exit{Status: 304}, true},
		{stealecho.Exit{Status: 304, Err: echo.NewHTTPError(304)}, true},
		{stealecho.Exit{Status: 404, Err: echo.NewHTTPError(404), Marked: true}, true},
		{stealecho.Exit{Status: 404, Err: echo.NewHTTPError(404)}, false},
		{stealecho.Exit{Status: 500, Marked: true}, false},
		{stealecho.Exit{Status: 503, Err: echo.NewHTTPError(503), Marked: true}, false},
		{stealecho.Exit{Status: 500, Err: errors.New("down"), Marked: true}, false},
		{stealecho.Exit{Status: 200, Err: errors.New("failed after writing"), Marked: true}, false},
		{stealecho.Exit{Status: 204, Err: errors.New("failed after writing")}, false},
		{stealecho.Exit{Status: 200, Err: fmt.Errorf("wrapped: %w", echo.NewHTTPError(404)), Marked: true}, false},
	} {
		if got := stealecho.DefaultClassifier(tc.exit); got != tc.want {
			t.Errorf("DefaultClassifier(%+v) = %v, want %v", tc.exit, got, tc.want)
		}
	}
}

// seenExit is what a test classifier keeps of an Exit: echo reuses the
// Context, so it is read during the call.
type seenExit struct {
	path    string
	status  int
	err     error
	marked  bool
	elapsed time.Duration
}

func TestSkipperAndClassifier(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	var mu sync.Mutex
	var seen []seenExit
	classify := func(e stealecho.Exit) bool {
		mu.Lock()
		seen = append(seen, seenExit{e.Context.Path(), e.Status, e.Err, e.Marked, e.Elapsed})
		mu.Unlock()
		return e.Status == http.StatusOK && e.Context.Path() == "/slow"
	}
	e := newEcho(stealecho.MiddlewareWithConfig(stealecho.Config{
		Recruiter:  rig.Rec,
		Skipper:    func(c echo.Context) bool { return strings.HasPrefix(c.Path(), "/admin") },
		Classifier: classify,
	}))
	e.GET("/admin/purge", func(c echo.Context) error {
		marked(c)
		return c.NoContent(http.StatusNoContent)
	})
	srv := stealtest.Serve(t, rig.Wrap(e))
	rig.Draw()
	for _, path := range []string{"/hit", "/admin/purge", "/unavailable", "/error", "/same-error", "/wrapped", "/late", "/slow"} {
		stealtest.Get(t, srv.URL+path, nil)
	}
	rig.Settle(t)
	if n := rig.Started(); n != 1 {
		t.Fatalf("%d slices ran, want 1: only /slow is a fast exit to the classifier, /admin is skipped", n)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []seenExit{
		{path: "/hit", status: 200, marked: true},
		{path: "/unavailable", status: 503, marked: true},
		{path: "/error", status: 500, marked: true},
		{path: "/same-error", status: 304},
		{path: "/wrapped", status: 304},
		{path: "/late", status: 200, marked: true}, // committed before its error: what was written
		{path: "/slow", status: 200},
	}
	if len(seen) != len(want) {
		t.Fatalf("the classifier saw %+v, want %d exits (none for the skipped /admin)", seen, len(want))
	}
	wantErr := map[string]string{
		"/unavailable": "code=503, message=try later",
		"/error":       "database down",
		"/same-error":  "code=304, message=Not Modified",
		"/wrapped":     "code=502, message=upstream, internal=code=304, message=Not Modified",
		"/late":        "failed after the response was written",
	}
	for i, got := range seen {
		gotErr := ""
		if got.err != nil {
			gotErr = got.err.Error()
		}
		if got.path != want[i].path || got.status != want[i].status || got.marked != want[i].marked ||
			gotErr != wantErr[got.path] || got.elapsed <= 0 {
			t.Errorf("exit %d: the classifier saw %+v, want %+v with error %q", i, got, want[i], wantErr[want[i].path])
		}
	}
}
