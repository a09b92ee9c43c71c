package stealecho_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealecho "github.com/worksteal/worksteal/middleware/echov5"
)

// A Config with only its Recruiter gets the defaults for its nil fields:
// DefaultClassifier (a marked 200 runs a slice, a marked error does not)
// and a Skipper that skips nothing.
func TestNilConfigFieldsKeepTheDefaults(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, true) // inline: the slice has run when ServeHTTP returns
	rig.Draw()
	mw, err := stealecho.Config{Recruiter: rig.Rec, Classifier: nil, Skipper: nil}.ToMiddleware()
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.Logger = slog.New(slog.DiscardHandler)
	e.Use(mw)
	e.GET("/ok", func(c *echo.Context) error { marked(c); return c.String(http.StatusOK, "ok") })
	e.GET("/fail", func(c *echo.Context) error { marked(c); return echo.NewHTTPError(http.StatusBadGateway, "") })
	serve := func(path string, want int) int {
		rig.ForgetCoolOffs()
		before := rig.Started()
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Fatalf("GET %s: %d, want %d", path, rec.Code, want)
		}
		return rig.Started() - before
	}
	if n := serve("/ok", http.StatusOK); n != 1 {
		t.Fatalf("a marked 200 started %d slices, want 1", n)
	}
	if n := serve("/fail", http.StatusBadGateway); n != 0 {
		t.Fatalf("a marked 502 started %d slices, want 0", n)
	}
}
