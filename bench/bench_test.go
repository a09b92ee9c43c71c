package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// The histogram's buckets are contiguous and ordered, and every value
// falls in a bucket whose middle is within 0.4 % of it: the accuracy the
// report claims for its quantiles.
func TestHistogramBuckets(t *testing.T) {
	t.Parallel()
	prev := -1
	for _, v := range []int64{0, 1, 127, 128, 129, 255, 256, 1000, 12345, 1e6, 1e9, 1 << 40} {
		i := bucketOf(v)
		if i < prev {
			t.Fatalf("bucketOf(%d) = %d, below the previous value's %d", v, i, prev)
		}
		prev = i
		if mid := bucketMid(i); math.Abs(mid-float64(v)) > 0.004*float64(v)+0.5 {
			t.Errorf("value %d: bucket %d has middle %.1f, more than 0.4 %% away", v, i, mid)
		}
	}
	for v := int64(1); v < 1<<20; v = v*3/2 + 1 {
		if got := bucketOf(v + 1); got != bucketOf(v) && got != bucketOf(v)+1 {
			t.Fatalf("buckets skip between %d (%d) and %d (%d)", v, bucketOf(v), v+1, got)
		}
	}
}

// Quantiles read from the histogram match exact quantiles of the same
// samples within 1 %.
func TestHistogramQuantiles(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	h := &histogram{}
	samples := make([]time.Duration, 100_000)
	for i := range samples {
		samples[i] = time.Duration(math.Exp(r.NormFloat64()) * float64(time.Millisecond)) // log-normal around 1 ms
		h.record(samples[i])
	}
	slices.Sort(samples)
	for _, q := range []float64{0.5, 0.99, 0.999} {
		exact := samples[int(q*float64(len(samples)))-1]
		got := h.quantile(q)
		if rel := math.Abs(float64(got-exact)) / float64(exact); rel > 0.01 {
			t.Errorf("q%.3f = %v, exact %v: %.2f %% off", q, got, exact, rel*100)
		}
	}
	if got, want := time.Duration(h.max.Load()), samples[len(samples)-1]; got != want {
		t.Errorf("max = %v, want %v", got, want)
	}
}

// splice rewrites only what lies between the markers, and appends the
// markers with the section to a document that has none.
func TestSplice(t *testing.T) {
	t.Parallel()
	doc := "# Benchmarks\n\nhand-written\n\n" + fleetMarks.begin + "\nold figures\n" + fleetMarks.end + "\n\n## after, by another helper\n"
	got := string(splice([]byte(doc), fleetMarks, "new figures\n"))
	want := "# Benchmarks\n\nhand-written\n\n" + fleetMarks.begin + "\nnew figures\n" + fleetMarks.end + "\n\n## after, by another helper\n"
	if got != want {
		t.Fatalf("splice:\n%s\nwant:\n%s", got, want)
	}
	if again := string(splice([]byte(got), fleetMarks, "new figures\n")); again != got {
		t.Errorf("a second splice of the same section changed the file:\n%s", again)
	}
	appended := string(splice([]byte("# Benchmarks\n\ntext\n"), fleetMarks, "s\n"))
	if want := "# Benchmarks\n\ntext\n\n" + fleetMarks.begin + "\ns\n" + fleetMarks.end + "\n"; appended != want {
		t.Errorf("without markers:\n%q\nwant\n%q", appended, want)
	}
}

// A chart is well-formed XML with its title, labels and a legend entry
// per series, and puts no point outside its plotting area.
func TestChartSVG(t *testing.T) {
	t.Parallel()
	c := chart{Title: "T & t", XLabel: "x unit", YLabel: "y unit", LogX: true, LogY: true, Series: []series{
		{Name: "a", X: []float64{250, 1000, 2500}, Y: []float64{1.2, 1.5, 9}, Points: true},
		{Name: "b <dashed>", X: []float64{250, 1000, 2500}, Y: []float64{0, 2, 3}, Dashed: true},
	}}
	svg := c.svg()
	dec := xml.NewDecoder(strings.NewReader(svg))
	var circles int
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "circle" {
			circles++
			for _, a := range se.Attr {
				if a.Name.Local == "cy" && (bytes.HasPrefix([]byte(a.Value), []byte("-")) || a.Value == "NaN") {
					t.Errorf("point outside the plot: cy=%s", a.Value)
				}
			}
		}
	}
	if circles != 3 {
		t.Errorf("%d points marked, want 3 (series a)", circles)
	}
	for _, s := range []string{"T &amp; t", "x unit", "y unit", ">a<", "b &lt;dashed&gt;", "stroke-dasharray"} {
		if !strings.Contains(svg, s) {
			t.Errorf("svg lacks %q", s)
		}
	}
}
