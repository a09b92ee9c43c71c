package stealecho_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealecho "github.com/worksteal/worksteal/middleware/echo"
)

// fuzzErr is the error a fuzzed handler returns: none, an *echo.HTTPError
// (possibly wrapping another as Internal), or a plain or wrapped error.
func fuzzErr(kind uint8, code int) error {
	switch kind % 5 {
	case 1:
		return echo.NewHTTPError(code)
	case 2:
		return echo.NewHTTPError(http.StatusInternalServerError).SetInternal(echo.NewHTTPError(code))
	case 3:
		return errors.New("plain")
	case 4:
		return fmt.Errorf("wrapped: %w", echo.NewHTTPError(code))
	}
	return nil
}

// FuzzDefaultClassifier: for any status, error and mark, a 5xx or an
// error echo answers with a 500 is never a fast exit.
func FuzzDefaultClassifier(f *testing.F) {
	for _, s := range []int{0, -1, 200, 204, 304, 404, 500, 503, 1 << 40} {
		for kind := range uint8(5) {
			f.Add(s, kind, 404, true)
		}
	}
	f.Fuzz(func(t *testing.T, status int, kind uint8, code int, marked bool) {
		err := fuzzErr(kind, code)
		got := stealecho.DefaultClassifier(stealecho.Exit{Status: status, Err: err, Marked: marked})
		var he *echo.HTTPError
		failed := status >= 500 || err != nil && !errors.As(err, &he) || kind%5 == 4 // echo answers a wrapped HTTPError with 500
		want := !failed && (marked || status == http.StatusNoContent || status == http.StatusNotModified)
		if got != want {
			t.Fatalf("DefaultClassifier(status %d, err %v, marked %v) = %v, want %v", status, err, marked, got, want)
		}
	})
}

// FuzzMiddlewareExit: whatever a drawn request's handler writes or returns,
// the classifier's Status is what the client gets, and the default
// classifier never calls an error response a fast exit.
func FuzzMiddlewareExit(f *testing.F) {
	f.Add(uint16(204), uint8(0), uint16(0), true)
	f.Add(uint16(0), uint8(1), uint16(404), true)
	f.Add(uint16(0), uint8(2), uint16(304), true)
	f.Add(uint16(0), uint8(3), uint16(0), true)
	f.Add(uint16(0), uint8(4), uint16(400), true)
	f.Add(uint16(200), uint8(3), uint16(0), true) // written, then failed
	rig := stealtest.New(f, false)
	rig.Draw() // every request is drawn; the classifier below runs no slice
	var seen stealecho.Exit
	e := echo.New()
	e.Logger.SetOutput(io.Discard)
	e.Use(stealecho.MiddlewareWithConfig(stealecho.Config{
		Recruiter:  rig.Rec,
		Classifier: func(x stealecho.Exit) bool { seen = x; seen.Context = nil; return false },
	}))
	var write uint16
	var kind uint8
	var code uint16
	var mark bool
	e.GET("/", func(c echo.Context) error {
		if mark {
			marked(c)
		}
		if write != 0 {
			if err := c.NoContent(200 + int(write)%400); err != nil { // 2xx to 5xx
				return err
			}
		}
		return fuzzErr(kind, 400+int(code)%200) // an error echo can write
	})

	f.Fuzz(func(t *testing.T, w uint16, k uint8, c uint16, m bool) {
		write, kind, code, mark = w, k, c, m
		seen = stealecho.Exit{}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if seen.Status != rec.Code || seen.Marked != m {
			t.Fatalf("classifier saw status %d, marked %v; the client got %d (marked %v)", seen.Status, seen.Marked, rec.Code, m)
		}
		if rec.Code >= 500 && stealecho.DefaultClassifier(seen) {
			t.Fatalf("DefaultClassifier calls a %d (err %v) a fast exit", rec.Code, seen.Err)
		}
	})
}
