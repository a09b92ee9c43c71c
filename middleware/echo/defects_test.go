package stealecho_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealecho "github.com/worksteal/worksteal/middleware/echo"
)

// TestInlineWithGzipInside: echo's Gzip inside the middleware returns its
// gzip.Writer to a pool when the chain returns; the inline flush must go
// to the writer the chain was given, not to that pooled one, which another
// request may be using (-race reported it every run).
func TestInlineWithGzipInside(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, true)
	rig.Draw()
	e := echo.New()
	e.Use(stealecho.Middleware(rig.Rec))
	e.Use(middleware.Gzip())
	e.GET("/", func(c echo.Context) error {
		marked(c)
		return c.String(http.StatusOK, strings.Repeat("cached ", 100))
	})
	srv := stealtest.Serve(t, rig.Wrap(e))

	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				rig.ForgetCoolOffs()
				req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
				req.Header.Set("Accept-Encoding", "gzip")
				resp, err := http.DefaultTransport.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				zr, err := gzip.NewReader(resp.Body)
				if err != nil {
					t.Errorf("gzip: %v", err)
					resp.Body.Close()
					return
				}
				body, err := io.ReadAll(zr)
				resp.Body.Close()
				if err != nil || string(body) != strings.Repeat("cached ", 100) {
					t.Errorf("body %q, %v", body, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	rig.Settle(t)
	if rig.Started() == 0 {
		t.Error("no slice ran")
	}
}

// TestPreAndUseBothSeeTheMark: two recruiters' middlewares on one route,
// one by Pre and one by Use, both drawn: the handler's one mark reaches
// both, and each runs its slice.
func TestPreAndUseBothSeeTheMark(t *testing.T) {
	t.Parallel()
	outer, inner := stealtest.New(t, false), stealtest.New(t, false)
	outer.Draw()
	inner.Draw()
	e := echo.New()
	e.Pre(stealecho.Middleware(outer.Rec))
	e.Use(stealecho.Middleware(inner.Rec))
	e.GET("/", func(c echo.Context) error {
		marked(c)
		return c.String(http.StatusOK, "cached")
	})
	srv := stealtest.Serve(t, outer.Wrap(e))
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	outer.NextRun(t)
	inner.NextRun(t)
}
