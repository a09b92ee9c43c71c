package adaptertest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	"github.com/worksteal/worksteal/recruiter"
)

// Exercise runs the scenarios every adapter shares against h, each as a
// parallel subtest with a rig of its own.
func Exercise(t *testing.T, h Host) {
	for _, sc := range []struct {
		name string
		run  func(*testing.T, Host)
	}{
		{"DismissedRequestsAreUntouched", dismissedAreUntouched},
		{"DrawnRequests", drawnRequests},
		{"ClassifierSeesWhatTheClientGets", classifierSeesWhatTheClientGets},
		{"SliceLinksToTheRequestSpan", sliceLinksToTheRequestSpan},
		{"BackgroundSliceStartsAfterTheRequest", backgroundSliceStartsAfterTheRequest},
		{"ClientsCannotForceRecruitment", clientsCannotForceRecruitment},
		{"NestedAdaptersBothSeeTheMark", nestedAdaptersBothSeeTheMark},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, h)
		})
	}
}

// env is one scenario's rig, and the outermost layer of its servers.
type env struct {
	host Host
	rig  *stealtest.Rig
	// requests counts the requests inside Around, for settle.
	requests sync.WaitGroup
	// linger is how long Around waits after the rest of the service has
	// returned; returned turns true after it.
	linger   time.Duration
	returned atomic.Bool
}

func newEnv(t *testing.T, h Host, inline bool) *env {
	return &env{host: h, rig: stealtest.New(t, inline)}
}

func (e *env) around(serve func()) {
	e.requests.Add(1)
	defer e.requests.Done()
	e.returned.Store(false)
	serve()
	time.Sleep(e.linger)
	e.returned.Store(true)
}

// serve serves the host's service behind adapters on recs (e's rig's if
// none is given).
func (e *env) serve(t *testing.T, s Setup, recs ...*recruiter.Recruiter) Client {
	if len(recs) == 0 {
		recs = []*recruiter.Recruiter{e.rig.Rec}
	}
	s.Recruiters, s.Around = recs, e.around
	return e.host.Serve(t, s)
}

// bare serves the host's service without adapter, for comparisons.
func (e *env) bare(t *testing.T) Client {
	return e.host.Serve(t, Setup{Around: func(serve func()) { serve() }})
}

// settle waits until the service has finished every request and no
// slice is in flight, so that counting slices afterwards is final.
func (e *env) settle(t *testing.T, rigs ...*stealtest.Rig) {
	t.Helper()
	e.requests.Wait()
	for _, r := range append(rigs, e.rig) {
		r.Settle(t)
	}
}

func typical(h Host) []Answer {
	var out []Answer
	for _, a := range h.Answers() {
		if a.Typical {
			out = append(out, a)
		}
	}
	return out
}

func dismissedAreUntouched(t *testing.T, h Host) {
	e := newEnv(t, h, false)
	with, without := e.serve(t, Setup{}), e.bare(t)
	for _, a := range h.Answers() {
		got, want := with.Call(t, a.Name, nil), without.Call(t, a.Name, nil)
		if got.Raw != want.Raw {
			t.Errorf("%s differs with the adapter:\n%s\nwithout:\n%s", a.Name, got.Raw, want.Raw)
		}
		if got.Probe == nil || !got.Probe.Untouched() {
			t.Errorf("%s: the handler did not get what the layer outside the adapter passed on", a.Name)
		}
	}
	e.settle(t)
	if n := e.rig.Started(); n != 0 {
		t.Fatalf("%d slices ran for dismissed requests", n)
	}
}

func drawnRequests(t *testing.T, h Host) {
	e := newEnv(t, h, false)
	with, without := e.serve(t, Setup{}), e.bare(t)
	e.rig.Draw()
	for _, a := range h.Answers() {
		before := e.rig.Started()
		if got, want := with.Call(t, a.Name, nil), without.Call(t, a.Name, nil); got.Raw != want.Raw {
			t.Errorf("drawn %s differs from the bare service's:\n%s\nwant:\n%s", a.Name, got.Raw, want.Raw)
		}
		e.settle(t)
		if got := e.rig.Started() - before; got != a.Runs {
			t.Errorf("drawn %s ran %d slices, want %d", a.Name, got, a.Runs)
		}
		e.rig.ForgetCoolOffs() // each answer starts with the job free to run
	}
}

// classifierSeesWhatTheClientGets: for every answer, the status or code
// the classifier is given is the one the client received, including
// where the framework turns the handler's answer into another after the
// handler (an error handler; a gRPC response that fails to marshal; a
// deadline that passed first).
func classifierSeesWhatTheClientGets(t *testing.T, h Host) {
	e := newEnv(t, h, false)
	seen := make(chan Seen, 16)
	with := e.serve(t, Setup{Classify: func(s Seen) bool { seen <- s; return false }})
	e.rig.Draw()
	for _, a := range h.Answers() {
		got := with.Call(t, a.Name, nil)
		var s Seen
		select {
		case s = <-seen:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the classifier was not called within 10s", a.Name)
		}
		if s.Answer != a.Name || s.Status != got.Status || s.Marked != a.Marked || s.Elapsed <= 0 {
			t.Errorf("%s: the classifier saw %+v; the client got %d, the handler marked: %v", a.Name, s, got.Status, a.Marked)
		}
	}
	e.settle(t)
	if len(seen) != 0 {
		t.Errorf("the classifier saw %d more requests than were made", len(seen))
	}
	if n := e.rig.Started(); n != 0 {
		t.Fatalf("%d slices ran with a classifier that says no", n)
	}
}

func sliceLinksToTheRequestSpan(t *testing.T, h Host) {
	e := newEnv(t, h, false)
	with := e.serve(t, Setup{Tracer: e.rig.Tracer})
	e.rig.Draw()
	for i, a := range typical(h) {
		e.rig.ForgetCoolOffs()
		got := with.Call(t, a.Name, nil)
		e.rig.NextRun(t)
		e.settle(t)
		spans := e.rig.RecruitSpans()
		if len(spans) != i+1 {
			t.Fatalf("%s: %d recruitment spans, want %d", a.Name, len(spans), i+1)
		}
		sc := got.Probe.Span()
		if !sc.IsValid() || !stealtest.LinkedTo(spans[i], sc) {
			t.Errorf("%s: the recruitment span links %+v, want the request's span %v", a.Name, spans[i].Links(), sc)
		}
	}
}

// backgroundSliceStartsAfterTheRequest: a layer outside the adapter
// lingers after it has returned (as logging would); a slice that started
// when the adapter returned, not when the server was done, would start
// before it. A job that sleeps past its budget, panics or fails changes
// nothing the client sees.
func backgroundSliceStartsAfterTheRequest(t *testing.T, h Host) {
	e := newEnv(t, h, false)
	e.linger = 20 * time.Millisecond
	with, without := e.serve(t, Setup{}), e.bare(t)
	jobs := []struct {
		does string
		run  func(context.Context) (recruiter.Report, error)
	}{
		{"sleeps past its budget", func(context.Context) (recruiter.Report, error) {
			time.Sleep(150 * time.Millisecond)
			return recruiter.Report{}, nil
		}},
		{"panics", func(context.Context) (recruiter.Report, error) { panic("stolen work broke") }},
		{"fails", func(context.Context) (recruiter.Report, error) { return recruiter.Report{}, errors.New("no") }},
	}
	e.rig.Draw()
	answers := typical(h)
	for _, job := range jobs {
		var early atomic.Bool // read when the slice starts, not when the test looks
		e.rig.SetJob(func(ctx context.Context) (recruiter.Report, error) {
			early.Store(!e.returned.Load())
			return job.run(ctx)
		})
		for _, a := range answers {
			e.rig.ForgetCoolOffs() // each of these jobs rests after its slice
			want := without.Call(t, a.Name, nil)
			if got := with.Call(t, a.Name, nil); got.Raw != want.Raw {
				t.Errorf("%s, with a job that %s: the client got\n%s\nwant\n%s", a.Name, job.does, got.Raw, want.Raw)
			}
			e.rig.NextRun(t)
			e.settle(t)
			if early.Load() {
				t.Errorf("%s: a slice (job that %s) started before the server was done with the request", a.Name, job.does)
			}
		}
	}
	js := e.rig.Rec.Stats().Jobs[0]
	if n := uint64(len(answers)); js.Timeouts != n || js.Panics != n || js.Errors != n {
		t.Fatalf("stats %+v, want %d timeouts, panics and errors each", js, n)
	}
}

// forged are request headers or metadata that a client might hope would
// make its request recruited or a fast exit.
var forged = map[string]string{
	"x-worksteal":            "1",
	"x-fast-exit":            "true",
	"worksteal-recruit":      "stolen",
	"x-worksteal-fast-exit":  "1",
	"worksteal-marked":       "1",
	"if-none-match":          "*",
	"if-modified-since":      "Mon, 02 Jan 2006 15:04:05 GMT",
	"cache-control":          "only-if-cached",
	"traceparent":            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	"x-forwarded-for":        "127.0.0.1",
	"x-http-method-override": "HEAD",
	"grpc-status":            "0",
}

// clientsCannotForceRecruitment: no header or metadata makes an answer
// that is no fast exit run a slice, drawn or not.
func clientsCannotForceRecruitment(t *testing.T, h Host) {
	e := newEnv(t, h, false)
	with := e.serve(t, Setup{})
	for _, drawn := range []bool{false, true} {
		if drawn {
			e.rig.Draw()
		} else {
			e.rig.Dismiss()
		}
		for _, a := range h.Answers() {
			if a.Runs == 0 {
				with.Call(t, a.Name, forged)
			}
		}
	}
	e.settle(t)
	if n := e.rig.Started(); n != 0 {
		t.Fatalf("forged requests ran %d slices", n)
	}
}

// nestedAdaptersBothSeeTheMark: two recruiters' adapters around one
// service, both drawn: the handler's one mark reaches both, and each runs
// its slice.
func nestedAdaptersBothSeeTheMark(t *testing.T, h Host) {
	e := newEnv(t, h, false)
	inner := stealtest.New(t, false)
	with := e.serve(t, Setup{}, e.rig.Rec, inner.Rec)
	e.rig.Draw()
	inner.Draw()
	for _, a := range typical(h) {
		e.rig.ForgetCoolOffs()
		inner.ForgetCoolOffs()
		with.Call(t, a.Name, nil)
		e.rig.NextRun(t)
		inner.NextRun(t)
		e.settle(t, inner)
	}
}
