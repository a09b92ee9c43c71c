package main

import (
	"context"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
)

// The open loop numbers its calls 0..n-1, each exactly once: the peer
// benchmark's counts rest on it.
func TestOpenLoopNumbersEachCallOnce(t *testing.T) {
	t.Parallel()
	var seen [1000]atomic.Int32
	n := openLoop(t.Context(), 2000, 100*time.Millisecond, func(i int64) { seen[i].Add(1) })
	if n < 150 || n > 250 {
		t.Fatalf("%d calls in 100ms at 2,000/s, want about 200", n)
	}
	for i := range n {
		if c := seen[i].Load(); c != 1 {
			t.Errorf("call %d made %d times, want once", i, c)
		}
	}
	for i := n; i < int64(len(seen)); i++ {
		if c := seen[i].Load(); c != 0 {
			t.Errorf("call %d made %d times, beyond the %d counted", i, c, n)
		}
	}
}

// The tracker tells tasks run twice and never from tasks run once, and
// counts only first runs towards await.
func TestTrackerTally(t *testing.T) {
	t.Parallel()
	tr := newTracker(5, 0)
	for _, id := range []int64{0, 1, 1, 3, 4, 4, 4, 99} {
		tr.handle(context.Background(), peerArgs{ID: id})
	}
	dups, missing := tr.tally(5)
	if dups != 3 || missing != 1 {
		t.Errorf("tally: %d duplicates and %d missing, want 3 and 1 (task 2)", dups, missing)
	}
	if got := tr.unique.Load(); got != 4 {
		t.Errorf("%d tasks counted once, want 4", got)
	}
	if err := tr.await(t.Context(), 5, 10*time.Millisecond); err == nil {
		t.Error("await of 5 tasks returned with 4 run")
	}
}

// A bar chart is well-formed XML with a bar per value it has, a gap
// labelled n/a per missing one, and no bar outside its plotting area.
func TestBarChartSVG(t *testing.T) {
	t.Parallel()
	c := barChart{Title: "T & t", YLabel: "tasks/s", Groups: []string{"a\nline 2", "b"}, Series: []string{"x", "y <z>"},
		Values: [][]float64{{50_000, 10}, {4_000, math.NaN()}},
		Lo:     [][]float64{{40_000, 9}, {3_000, math.NaN()}},
		Hi:     [][]float64{{60_000, 11}, {5_000, math.NaN()}}}
	svg := c.svg()
	dec := xml.NewDecoder(strings.NewReader(svg))
	bars := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "rect" {
			continue
		}
		for _, a := range se.Attr {
			if (a.Name.Local == "y" || a.Name.Local == "height") && (strings.HasPrefix(a.Value, "-") || a.Value == "NaN") {
				t.Errorf("bar outside the plot: %s=%s", a.Name.Local, a.Value)
			}
		}
		bars++
	}
	// The background, three bars and two legend keys.
	if bars != 6 {
		t.Errorf("%d rects, want 6 (background, 3 bars, 2 legend keys)", bars)
	}
	for _, s := range []string{"T &amp; t", "tasks/s", ">line 2<", "y &lt;z&gt;", "n/a"} {
		if !strings.Contains(svg, s) {
			t.Errorf("svg lacks %q", s)
		}
	}
}

// selectPeerExps keeps peerExps' order and refuses an unknown key, so
// that a typo runs nothing rather than fewer rows than asked.
func TestSelectPeerExps(t *testing.T) {
	t.Parallel()
	xs, err := selectPeerExps(map[string]bool{"wait-32": true, "noop-1": true})
	if err != nil || len(xs) != 2 || xs[0].key != "noop-1" || xs[1].key != "wait-32" {
		t.Errorf("got %v, %v; want noop-1 then wait-32", xs, err)
	}
	if xs, err := selectPeerExps(nil); err != nil || len(xs) != len(peerExps) {
		t.Errorf("none asked: got %d experiments, %v; want all %d", len(xs), err, len(peerExps))
	}
	if _, err := selectPeerExps(map[string]bool{"wait-32": true, "wait-64": true}); err == nil {
		t.Error("an unknown experiment was accepted")
	}
}

// worksteal's processing rows run under Mux.Serve: every task once, and
// its stop returns once Serve has.
func TestWorkstealPeerServesEveryTaskOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p, err := newWSPeer(srv.Options().Addr, wsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	for _, x := range []peerExp{
		{key: "noop", kind: expProcess, run: peerRun{workers: 32}},
		{key: "wait", kind: expProcess, run: peerRun{workers: 32, wait: 5 * time.Millisecond}},
	} {
		if err := p.reset(t.Context()); err != nil {
			t.Fatal(err)
		}
		r, err := peerProcess(t.Context(), 500, x, p)
		if err != nil {
			t.Fatalf("%s: %v", x.key, err)
		}
		if !r.exact() || r.n != 500 || r.rate <= 0 {
			t.Errorf("%s: %+v; want 500 tasks each run once, none left, no error", x.key, r)
		}
	}
}
