package main

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// series is one line of a chart.
type series struct {
	Name   string
	X, Y   []float64
	Color  string // default: the palette's, by position
	Dashed bool
	Points bool // mark each point (few points)
}

// chart is a line chart written as plain SVG: axes with ticks and units,
// a legend on the right; no dependency.
type chart struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	YMin                  *float64 // force the y axis to start here (linear)
	Series                []series
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22", "#393b79", "#ad494a"}

const (
	plotW, plotH               = 900, 420
	padL, padR, padT, padB     = 72, 300, 40, 56
	innerW, innerH             = plotW - padL - padR, plotH - padT - padB
	fontAttrs                  = `font-family="Helvetica,Arial,sans-serif" fill="#222"`
	axisColor, gridColor       = "#444", "#e4e4e4"
	legendLine, legendRowSpace = 26, 20
)

// scale maps data to pixels on one axis.
type scale struct {
	lo, hi float64
	log    bool
	px     float64
	flip   bool
}

func (s scale) at(v float64) float64 {
	a, b, x := s.lo, s.hi, v
	if s.log {
		a, b, x = math.Log10(a), math.Log10(b), math.Log10(math.Max(v, s.lo))
	}
	f := (x - a) / (b - a)
	if s.flip {
		f = 1 - f
	}
	return f * s.px
}

// ticks returns about n round values across [lo, hi].
func (s scale) ticks(n int) []float64 {
	var out []float64
	if s.log {
		for e := math.Floor(math.Log10(s.lo)); e <= math.Ceil(math.Log10(s.hi)); e++ {
			for _, m := range []float64{1, 2, 5} {
				v := m * math.Pow(10, e)
				if v >= s.lo*0.999 && v <= s.hi*1.001 {
					out = append(out, v)
				}
			}
		}
		return out
	}
	step := niceStep((s.hi - s.lo) / float64(n))
	for v := math.Ceil(s.lo/step) * step; v <= s.hi+step*1e-9; v += step {
		out = append(out, v)
	}
	return out
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// bounds of all series' values on one axis, padded to round values.
func bounds(ss []series, get func(series) []float64, log bool, forceMin *float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, v := range get(s) {
			if log && v <= 0 {
				continue
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 1, 10
	}
	if log {
		// The data's own range with a margin, not whole decades: a few
		// points over a factor of ten would otherwise crowd one corner.
		if hi <= lo {
			return lo / 2, hi * 2
		}
		return lo / 1.25, hi * 1.25
	}
	if forceMin != nil {
		lo = *forceMin
	}
	if hi <= lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / 5)
	return math.Floor(lo/step) * step, math.Ceil(hi/step) * step
}

func fmtTick(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6 && math.Mod(v, 1e6) == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3 && math.Mod(v, 1e3) == 0:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// svg renders the chart.
func (c chart) svg() string {
	xlo, xhi := bounds(c.Series, func(s series) []float64 { return s.X }, c.LogX, nil)
	ylo, yhi := bounds(c.Series, func(s series) []float64 { return s.Y }, c.LogY, c.YMin)
	xs := scale{lo: xlo, hi: xhi, log: c.LogX, px: innerW}
	ys := scale{lo: ylo, hi: yhi, log: c.LogY, px: innerH, flip: true}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold" %s>%s</text>`+"\n", padL, fontAttrs, html.EscapeString(c.Title))
	fmt.Fprintf(&b, `<g transform="translate(%d,%d)">`+"\n", padL, padT)
	for _, v := range xs.ticks(6) {
		x := xs.at(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="0" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, x, innerH, gridColor)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="12" text-anchor="middle" %s>%s</text>`+"\n", x, innerH+18, fontAttrs, fmtTick(v))
	}
	for _, v := range ys.ticks(6) {
		y := ys.at(v)
		fmt.Fprintf(&b, `<line x1="0" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", y, innerW, y, gridColor)
		fmt.Fprintf(&b, `<text x="-8" y="%.1f" font-size="12" text-anchor="end" dominant-baseline="middle" %s>%s</text>`+"\n", y+4, fontAttrs, fmtTick(v))
	}
	fmt.Fprintf(&b, `<path d="M0,0 V%d H%d" fill="none" stroke="%s"/>`+"\n", innerH, innerW, axisColor)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="13" text-anchor="middle" %s>%s</text>`+"\n", innerW/2, innerH+44, fontAttrs, html.EscapeString(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(%d,%d) rotate(-90)" font-size="13" text-anchor="middle" %s>%s</text>`+"\n", -54, innerH/2, fontAttrs, html.EscapeString(c.YLabel))
	for i, s := range c.Series {
		color := cmp.Or(s.Color, palette[i%len(palette)])
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6,4"`
		}
		var d strings.Builder
		for j := range s.X {
			if (c.LogY && s.Y[j] <= 0) || (c.LogX && s.X[j] <= 0) {
				continue
			}
			cmd := "L"
			if d.Len() == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f,%.1f ", cmd, xs.at(s.X[j]), ys.at(math.Min(s.Y[j], yhi)))
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.TrimSpace(d.String()), color, dash)
		if s.Points {
			for j := range s.X {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", xs.at(s.X[j]), ys.at(math.Min(s.Y[j], yhi)), color)
			}
		}
		ly := 8 + i*legendRowSpace
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", innerW+16, ly, innerW+16+legendLine, ly, color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" %s>%s</text>`+"\n", innerW+16+legendLine+6, ly+4, fontAttrs, html.EscapeString(s.Name))
	}
	b.WriteString("</g>\n</svg>\n")
	return b.String()
}
