package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// barChart is a grouped bar chart written as plain SVG, on a log axis:
// per group (an experiment), a bar per series (a system), with a whisker
// from the rounds' lowest to highest value. A missing value (NaN) leaves
// a gap labelled "n/a".
type barChart struct {
	Title, YLabel string
	Groups        []string
	Series        []string
	Values        [][]float64 // [series][group]
	Lo, Hi        [][]float64 // whiskers, same shape; nil: none
}

func (c barChart) svg() string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range c.Values {
		for j, v := range c.Values[i] {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
			if c.Hi != nil && c.Hi[i][j] > 0 {
				hi = math.Max(hi, c.Hi[i][j])
			}
			if c.Lo != nil && c.Lo[i][j] > 0 {
				lo = math.Min(lo, c.Lo[i][j])
			}
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 1, 10
	}
	ys := scale{lo: math.Pow(10, math.Floor(math.Log10(lo))), hi: roundUp(hi * 1.1), log: true, px: innerH, flip: true}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold" %s>%s</text>`+"\n", padL, fontAttrs, html.EscapeString(c.Title))
	fmt.Fprintf(&b, `<g transform="translate(%d,%d)">`+"\n", padL, padT)
	for _, v := range ys.ticks(6) {
		y := ys.at(v)
		fmt.Fprintf(&b, `<line x1="0" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", y, innerW, y, gridColor)
		fmt.Fprintf(&b, `<text x="-8" y="%.1f" font-size="12" text-anchor="end" dominant-baseline="middle" %s>%s</text>`+"\n", y+4, fontAttrs, fmtTick(v))
	}
	fmt.Fprintf(&b, `<path d="M0,0 V%d H%d" fill="none" stroke="%s"/>`+"\n", innerH, innerW, axisColor)
	fmt.Fprintf(&b, `<text transform="translate(%d,%d) rotate(-90)" font-size="13" text-anchor="middle" %s>%s</text>`+"\n", -54, innerH/2, fontAttrs, html.EscapeString(c.YLabel))
	groupW := float64(innerW) / float64(max(len(c.Groups), 1))
	barW := groupW * 0.8 / float64(max(len(c.Series), 1))
	for j, g := range c.Groups {
		x0 := float64(j)*groupW + groupW*0.1
		for i := range c.Series {
			x := x0 + float64(i)*barW
			v := c.Values[i][j]
			color := palette[i%len(palette)]
			if !(v > 0) {
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" text-anchor="middle" fill="#888" font-family="Helvetica,Arial,sans-serif">n/a</text>`+"\n", x+barW/2, innerH-4)
				continue
			}
			y := ys.at(v)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x+1, y, barW-2, float64(innerH)-y, color)
			if c.Lo != nil && c.Hi != nil && c.Lo[i][j] > 0 && c.Hi[i][j] > 0 {
				cx := x + barW/2
				fmt.Fprintf(&b, `<path d="M%.1f,%.1f V%.1f M%.1f,%.1f H%.1f M%.1f,%.1f H%.1f" stroke="#222" fill="none"/>`+"\n",
					cx, ys.at(c.Lo[i][j]), ys.at(c.Hi[i][j]), cx-3, ys.at(c.Lo[i][j]), cx+3, cx-3, ys.at(c.Hi[i][j]), cx+3)
			}
		}
		for k, line := range strings.Split(g, "\n") {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle" %s>%s</text>`+"\n", float64(j)*groupW+groupW/2, innerH+16+k*13, fontAttrs, html.EscapeString(line))
		}
	}
	for i, s := range c.Series {
		ly := 8 + i*legendRowSpace
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="10" fill="%s"/>`+"\n", innerW+16, ly-5, legendLine, palette[i%len(palette)])
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" %s>%s</text>`+"\n", innerW+16+legendLine+6, ly+4, fontAttrs, html.EscapeString(s))
	}
	b.WriteString("</g>\n</svg>\n")
	return b.String()
}

// roundUp is the least of 1, 2 and 5 times a power of ten at or above v.
func roundUp(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
