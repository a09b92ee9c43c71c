package stealhttp_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

// FuzzDefaultClassifier: for any status (even impossible ones), mark and
// request headers, a 5xx is never a fast exit, an unmarked response is one
// only for 204 and 304, and a marked one below 500 is one.
func FuzzDefaultClassifier(f *testing.F) {
	for _, s := range []int{0, -1, 100, 200, 204, 304, 404, 499, 500, 503, 599, 600, 999, 1 << 40} {
		f.Add(s, true, "X-Cache", "HIT")
		f.Add(s, false, "Status", "204")
	}
	f.Fuzz(func(t *testing.T, status int, marked bool, name, value string) {
		r := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/"}, Header: http.Header{name: {value}}}
		got := stealhttp.DefaultClassifier(stealhttp.Exit{Request: r, Status: status, Marked: marked})
		want := status < 500 && (marked || status == http.StatusNoContent || status == http.StatusNotModified)
		if got != want {
			t.Fatalf("DefaultClassifier(status %d, marked %v) = %v, want %v", status, marked, got, want)
		}
	})
}

// FuzzMiddlewareExit: whatever status, headers and body a drawn request's
// handler writes, the middleware passes the response through unchanged and
// tells the classifier the status the client got (the first final one, 200
// when none was written).
func FuzzMiddlewareExit(f *testing.F) {
	f.Add(uint16(204), uint16(0), true, false, "X-Cache", "HIT")
	f.Add(uint16(103), uint16(500), true, true, "Link", "</a.css>; rel=preload")
	f.Add(uint16(0), uint16(0), false, true, "", "")
	f.Add(uint16(999), uint16(200), true, false, "Content-Length", "-1")
	f.Add(uint16(304), uint16(0), false, false, "Retry-After", "\x00\xff")
	rig := stealtest.New(f, false)
	rig.Draw() // every request is drawn; the classifier below runs no slice
	var seen stealhttp.Exit
	mw := stealhttp.Middleware(rig.Rec, stealhttp.WithClassifier(func(e stealhttp.Exit) bool { seen = e; return false }))

	f.Fuzz(func(t *testing.T, first, second uint16, marked, body bool, name, value string) {
		valid := func(c uint16) int { return 100 + int(c)%900 } // net/http refuses others
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if marked {
				recruiter.MarkFastExit(r.Context())
			}
			w.Header()[name] = []string{value}
			if first != 0 {
				w.WriteHeader(valid(first))
			}
			if second != 0 {
				w.WriteHeader(valid(second))
			}
			if body {
				_, _ = w.Write([]byte("body"))
			}
		})
		want := httptest.NewRecorder()
		handler.ServeHTTP(want, httptest.NewRequest(http.MethodGet, "/", nil))
		got := httptest.NewRecorder()
		seen = stealhttp.Exit{}
		mw(handler).ServeHTTP(got, httptest.NewRequest(http.MethodGet, "/", nil))

		if got.Code != want.Code || got.Body.String() != want.Body.String() || len(got.Header()) != len(want.Header()) {
			t.Fatalf("through the middleware: %d %q %v; without: %d %q %v", got.Code, got.Body, got.Header(), want.Code, want.Body, want.Header())
		}
		wantStatus := 0
		for _, c := range []uint16{first, second} {
			if c != 0 && wantStatus == 0 && valid(c) >= 200 {
				wantStatus = valid(c)
			}
		}
		if wantStatus == 0 {
			wantStatus = http.StatusOK
		}
		if seen.Status != wantStatus || seen.Marked != marked || seen.Request == nil {
			t.Fatalf("classifier saw status %d, marked %v; want %d, %v", seen.Status, seen.Marked, wantStatus, marked)
		}
		if seen.Status >= 500 && stealhttp.DefaultClassifier(seen) {
			t.Fatalf("DefaultClassifier calls a %d a fast exit", seen.Status)
		}
	})
}
