package dashboard

import (
	"math"
	"strconv"
	"time"
)

// chartView is one SVG chart, laid out on the server: the page needs no
// script and no library to draw it.
type chartView struct {
	Title   string
	W, H    int     // the viewBox; the SVG scales to its container's width
	Left    float64 // the plot area, in viewBox units
	Right   float64
	Top     float64
	Bottom  float64
	YTicks  []tick
	XTicks  []tick
	Series  []seriesView
	Points  int    // samples with at least one value
	Caption string // e.g. "last 10m, one sample every 1s"
}

type tick struct {
	At    float64 // x or y in viewBox units
	Label string
}

type seriesView struct {
	Name   string
	Color  string // a CSS class: c0 … c7
	Line   string // an SVG path; each gap starts a new subpath
	Area   string // the same, closed down to the baseline
	Latest string // the last value, formatted; "–" for a gap
}

// series is one line of a chart before layout: a value per sample, NaN
// for a gap.
type series struct {
	name   string
	color  string
	values []float64
}

// layoutChart scales the samples' series into a w×h chart. The time axis
// ends at now and starts at the oldest sample, or window before now if
// that is later, so that a young dashboard still fills its chart.
func layoutChart(title string, w, h int, now time.Time, window, every time.Duration, times []time.Time, ss []series) chartView {
	c := chartView{Title: title, W: w, H: h, Left: 52, Right: float64(w) - 14, Top: 12, Bottom: float64(h) - 26}
	span := chartSpan(now, window, every, times)
	shown := span
	if span < window && span >= 10*time.Second {
		shown = span.Round(time.Second) // a young chart: "last 16s", not "last 15.56s"
	}
	c.Caption = "last " + fmtDuration(shown) + ", a sample every " + fmtDuration(every)

	lo, hi, step := yAxis(ss)
	y := func(v float64) float64 { return c.Bottom - (v-lo)/(hi-lo)*(c.Bottom-c.Top) }
	// Counted, not stepped from lo to hi: a step lost in rounding
	// (lo+step == lo) must not make the loop endless.
	for i := range min(int(math.Round((hi-lo)/step)), maxYTicks) + 1 {
		v := lo + float64(i)*step
		c.YTicks = append(c.YTicks, tick{At: round1(y(v)), Label: fmtAxis(v)})
	}

	x := func(t time.Time) float64 {
		return c.Right - float64(now.Sub(t))/float64(span)*(c.Right-c.Left)
	}
	tstep := timeStep(span)
	for back := time.Duration(0); back <= span; back += tstep {
		label := "now"
		if back > 0 {
			label = "−" + fmtDuration(back)
		}
		c.XTicks = append(c.XTicks, tick{At: round1(x(now.Add(-back))), Label: label})
	}

	seen := make([]bool, len(times))
	for _, s := range ss {
		var line, area []byte
		var segment []float64 // x, y pairs of the current run without a gap
		flush := func() {
			if len(segment) == 0 {
				return
			}
			start := len(line)
			for i := 0; i < len(segment); i += 2 {
				line = appendCmd(line, i == 0, segment[i], segment[i+1])
			}
			// The area: up from the baseline, along the line's own text
			// (its M made an L), and down again.
			base := round1(y(math.Max(lo, 0)))
			area = appendCmd(area, true, segment[0], base)
			area = append(append(area, 'L'), line[start+1:]...)
			area = append(appendCmd(area, false, segment[len(segment)-2], base), 'Z')
			if len(segment) == 2 {
				line = append(line, "h0"...) // a lone point: a dot, thanks to the round cap
			}
			segment = segment[:0]
		}
		// The samples are reduced to columns (see columnWidth) before they
		// join the segment. A gap between two columns breaks the line there;
		// gaps within a column break it once, after the column's points: a
		// flaky series must not cost a subpath per sample.
		var col column  // the current column's samples, not yet in segment
		broken := false // a gap since the last column's points
		emit := func() {
			for _, i := range col.points() {
				segment = append(segment, round1(x(times[i])), round1(y(s.values[i])))
			}
			if col.gapAfter {
				flush()
			}
			col = column{}
		}
		var last float64 // the newest sample, if it is drawn
		lastDrawn := false
		for i, v := range s.values {
			px := x(times[i])
			if !(math.Abs(v) <= gaugeLimit) || px < c.Left-0.5 { // NaN, or beyond what yAxis scales
				if col.n == 0 {
					broken = true
				} else {
					col.gapAfter = true
				}
				lastDrawn = false
				continue
			}
			seen[i] = true
			last, lastDrawn = v, true
			at := int(math.Floor((px - c.Left) / columnWidth))
			if col.n > 0 && at != col.at {
				emit()
			}
			if col.n == 0 && broken {
				flush()
				broken = false
			}
			col.at = at
			col.add(i, v)
		}
		emit()
		flush()
		latest := "–"
		if lastDrawn {
			latest = fmtRate(last)
		}
		c.Series = append(c.Series, seriesView{Name: s.name, Color: s.color, Line: string(line), Area: string(area), Latest: latest})
	}
	for _, ok := range seen {
		if ok {
			c.Points++
		}
	}
	return c
}

// chartSpan is the time a chart covers, ending at now: from the oldest
// sample, at least ten intervals, at most the window.
func chartSpan(now time.Time, window, every time.Duration, times []time.Time) time.Duration {
	if len(times) == 0 {
		return window
	}
	return min(window, max(now.Sub(times[0]), 10*every))
}

// sparkW and sparkH are a sparkline's viewBox (dashboard.html and .css
// repeat them): small enough for a table cell.
const sparkW, sparkH = 64, 16

// sparkline draws values, one per sample and NaN for a gap, as a bare
// sparkW×sparkH SVG path: no axes, time as in layoutChart, values from 0
// (or below, if any is) to the highest. Like layoutChart it keeps only
// each column's lowest and highest, so a long window stays a short path.
func sparkline(now time.Time, window, every time.Duration, times []time.Time, values []float64) string {
	span := chartSpan(now, window, every, times)
	lo, hi := 0.0, 0.0
	for _, v := range values {
		if math.Abs(v) <= gaugeLimit {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if hi == lo {
		hi = lo + 1 // all zeros: a line along the bottom
	}
	x := func(t time.Time) float64 { return sparkW - float64(now.Sub(t))/float64(span)*sparkW }
	// A unit of margin above and below, so that the stroke is not cut.
	y := func(v float64) float64 { return sparkH - 1 - (v-lo)/(hi-lo)*(sparkH-2) }

	// Gaps break the line as in layoutChart: at most once per column.
	var path []byte
	var col column
	points := 0 // in the current subpath
	endRun := func() {
		if points == 1 {
			path = append(path, "h0"...) // a lone point: a dot, thanks to the round cap
		}
		points = 0
	}
	emit := func() {
		for _, i := range col.points() {
			path = appendCmd(path, points == 0, round1(x(times[i])), round1(y(values[i])))
			points++
		}
		if col.gapAfter {
			endRun()
		}
		col = column{}
	}
	broken := false // a gap since the last column's points
	for i, v := range values {
		px := x(times[i])
		if !(math.Abs(v) <= gaugeLimit) || px < -0.5 {
			if col.n == 0 {
				broken = true
			} else {
				col.gapAfter = true
			}
			continue
		}
		at := int(math.Floor(px / columnWidth))
		if col.n > 0 && at != col.at {
			emit()
		}
		if col.n == 0 && broken {
			endRun()
			broken = false
		}
		col.at = at
		col.add(i, v)
	}
	emit()
	endRun()
	return string(path)
}

// yAxis returns the value axis of the series: from lo to hi, which are
// multiples of step and hold 0 and every value. Values beyond ±gaugeLimit
// are left out (gauges never have them): rounding them to nice numbers
// would overflow.
func yAxis(ss []series) (lo, hi, step float64) {
	for _, s := range ss {
		for _, v := range s.values {
			if math.Abs(v) <= gaugeLimit { // false for NaN too
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if hi == lo {
		hi = lo + 1 // no data, or all zeros: an axis of 0 to 1
	}
	step = niceStep((hi - lo) / 4)
	lo, hi = math.Floor(lo/step)*step, math.Max(math.Ceil(hi/step)*step, lo+step)
	if !isFinite(lo) || !isFinite(hi) || !isFinite(hi-lo) || !(step > 0) || !isFinite(step) {
		return 0, 1, 0.25
	}
	return lo, hi, step
}

// maxYTicks bounds the ticks of the value axis; niceStep makes about four.
const maxYTicks = 10

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// columnWidth is the width, in viewBox units, of the columns a series is
// reduced to before it is drawn: each column keeps the lowest and the
// highest of its samples, so a spike stays visible while a line has at
// most one point per unit of the plot's width, whatever the samples. Two
// units, not one: each series is drawn twice (line and area), a chart may
// hold a series per job, and the page is refetched every 2 s.
const columnWidth = 2

// column gathers the samples of one column of a series.
type column struct {
	at       int // the column's index from the plot's left edge
	n        int // the samples in it
	lo, hi   int // the indexes of its lowest and highest values
	loV, hiV float64
	gapAfter bool // a gap follows its first sample: the line breaks after its points
}

func (c *column) add(i int, v float64) {
	if c.n == 0 || v < c.loV {
		c.lo, c.loV = i, v
	}
	if c.n == 0 || v > c.hiV {
		c.hi, c.hiV = i, v
	}
	c.n++
}

// points returns the indexes of the samples the column keeps, in time order.
func (c *column) points() []int {
	switch {
	case c.n == 0:
		return nil
	case c.lo == c.hi:
		return []int{c.lo}
	case c.lo < c.hi:
		return []int{c.lo, c.hi}
	}
	return []int{c.hi, c.lo}
}

// appendCmd appends a path command to b: "Mx,y" if move, else "Lx,y".
func appendCmd(b []byte, move bool, x, y float64) []byte {
	op := byte('L')
	if move {
		op = 'M'
	}
	b = strconv.AppendFloat(append(b, op), x, 'f', -1, 64)
	return strconv.AppendFloat(append(b, ','), y, 'f', -1, 64)
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// niceStep rounds raw up to 1, 2, 2.5 or 5 times a power of ten, so that
// axis labels are numbers a reader would pick.
func niceStep(raw float64) float64 {
	if !(raw > 0) || math.IsInf(raw, 0) {
		return 0.25
	}
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*pow {
			return m * pow
		}
	}
	return 10 * pow
}

// timeStep picks the spacing of the time axis's ticks: at most six.
func timeStep(span time.Duration) time.Duration {
	for _, s := range []time.Duration{
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	} {
		if span/s <= 6 {
			return s
		}
	}
	return 24 * time.Hour
}
