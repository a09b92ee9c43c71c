package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// charts are the run's plots, by file name.
func (r *report) charts() map[string]chart {
	out := map[string]chart{}
	if len(r.cost) > 0 {
		c := chart{Title: "Fast exits: p99 latency vs request rate (one service)", XLabel: "requests per second (log)", YLabel: "p99 latency, ms (log)", LogX: true, LogY: true}
		for _, v := range variants {
			if v.topOnly() {
				continue // one point: the pressure table shows it
			}
			// The tasks' labels are too long for the legend.
			name := strings.ReplaceAll(v.Label, "automatic pace, 2 ms CPU each, backlog", "2 ms CPU")
			s := series{Name: name, Points: true, Dashed: v.Key == "in-0.01" || v.Key == "in-1"}
			for _, row := range r.cost {
				if row.Variant.Key == v.Key {
					s.X = append(s.X, row.Rate)
					s.Y = append(s.Y, float64(row.P99)/1e6)
				}
			}
			c.Series = append(c.Series, s)
		}
		out["fleet-latency.svg"] = c
	}
	if len(r.redis) > 0 {
		zero := 0.0
		c := chart{Title: "Lock traffic per process: bounded by Every, not by requests", XLabel: "requests per second across the fleet (log)", YLabel: "recruiter round trips / s / process", LogX: true, YMin: &zero}
		var ns []int
		for _, x := range r.redis {
			if !slices.Contains(ns, x.N) {
				ns = append(ns, x.N)
			}
		}
		for _, paced := range []bool{false, true} {
			for i, n := range ns {
				name := fmt.Sprintf("N = %d, fixed rates", n)
				if paced {
					name = fmt.Sprintf("N = %d, automatic pace", n)
				}
				s := series{Name: name, Points: true, Dashed: paced, Color: palette[i%len(palette)]}
				for _, x := range r.redis {
					if x.N == n && x.Paced == paced {
						s.X = append(s.X, x.Rate)
						s.Y = append(s.Y, x.LockRTPerProc)
					}
				}
				if len(s.X) > 0 {
					c.Series = append(c.Series, s)
				}
			}
		}
		lo, hi := r.redis[0].Rate, r.redis[0].Rate
		for _, x := range r.redis {
			lo, hi = min(lo, x.Rate), max(hi, x.Rate)
		}
		b := lockBound()
		c.Series = append(c.Series, series{Name: fmt.Sprintf("bound: %.0f (4 per job per Every)", b), X: []float64{lo, hi}, Y: []float64{b, b}, Dashed: true, Color: "#7f7f7f"})
		out["fleet-lock.svg"] = c
	}
	if len(r.health) > 0 {
		depth := chart{Title: "Queue depth over time (pending + leased)", XLabel: "seconds since start", YLabel: "items (log)", LogY: true}
		zero := 0.0
		returns := chart{Title: "Stale leases: time from expiry to claimed again", XLabel: "return time, s (log)", YLabel: "share of abandoned leases returned", LogX: true, YMin: &zero}
		for i, h := range r.health {
			color := palette[i%len(palette)] // the same in both plots
			d := series{Name: h.Scenario.Label, Dashed: h.Scenario.Daemon, Color: color}
			for _, s := range h.Depth {
				d.X = append(d.X, s.At.Seconds())
				d.Y = append(d.Y, float64(max(s.Pending+s.Leased, 1)))
			}
			depth.Series = append(depth.Series, d)
			if h.Injected == 0 || len(h.Returns) == 0 {
				continue
			}
			// An empirical CDF over all abandoned leases: those never
			// returned keep the curve below 1.
			c := series{Name: h.Scenario.Label, Dashed: h.Scenario.Daemon, Color: color}
			for i, v := range h.Returns {
				c.X = append(c.X, max(float64(v)/float64(time.Second), 0.001)) // log axis: 1 ms floor
				c.Y = append(c.Y, float64(i+1)/float64(h.Injected))
			}
			returns.Series = append(returns.Series, c)
		}
		out["fleet-depth.svg"] = depth
		out["fleet-returns.svg"] = returns
	}
	return out
}
