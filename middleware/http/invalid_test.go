package stealhttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

// Nil arguments to the options mean their defaults: WithClassifier(nil)
// keeps DefaultClassifier (a marked 200 runs a slice, a marked 500 does
// not), WithFilter(nil) filters nothing, a nil Option is skipped.
func TestNilOptionArgumentsKeepTheDefaults(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, true) // inline: the slice has run when ServeHTTP returns
	rig.Draw()
	mw := stealhttp.Middleware(rig.Rec, nil, stealhttp.WithClassifier(nil), stealhttp.WithFilter(nil))
	serve := func(status int) int {
		rig.ForgetCoolOffs()
		before := rig.Started()
		h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			recruiter.MarkFastExit(r.Context())
			w.WriteHeader(status)
		}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != status {
			t.Fatalf("status %d through the middleware, want %d", rec.Code, status)
		}
		return rig.Started() - before
	}
	if n := serve(http.StatusOK); n != 1 {
		t.Fatalf("a marked 200 started %d slices, want 1 (the default classifier, no filter)", n)
	}
	if n := serve(http.StatusInternalServerError); n != 0 {
		t.Fatalf("a marked 500 started %d slices, want 0", n)
	}
}
