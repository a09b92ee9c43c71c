package dashboard

import (
	"math"
	"strconv"
	"strings"
	"time"
)

var nan = math.NaN()

// fmtCount formats a counter with thousands separators: 1,234,567.
func fmtCount(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fmtMS formats milliseconds as a short duration; 0 is "–" (none).
func fmtMS(ms float64) string {
	if ms <= 0 {
		return "–"
	}
	return fmtDuration(time.Duration(ms * float64(time.Millisecond)))
}

// fmtDuration formats d with about three significant digits: 850µs,
// 12.5ms, 1.25s, 2m, 1h30m.
func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return trimFloat(float64(d)/float64(time.Microsecond), 0) + "µs"
	case d < 10*time.Millisecond:
		return trimFloat(float64(d)/float64(time.Millisecond), 2) + "ms"
	case d < time.Second:
		return trimFloat(float64(d)/float64(time.Millisecond), 1) + "ms"
	case d < time.Minute:
		return trimFloat(d.Seconds(), 2) + "s"
	case d < time.Hour:
		m, s := d/time.Minute, (d%time.Minute).Round(time.Second)/time.Second
		if s == 0 {
			return strconv.Itoa(int(m)) + "m"
		}
		return strconv.Itoa(int(m)) + "m" + strconv.Itoa(int(s)) + "s"
	}
	h, m := d/time.Hour, (d%time.Hour).Round(time.Minute)/time.Minute
	if m == 0 {
		return strconv.Itoa(int(h)) + "h"
	}
	return strconv.Itoa(int(h)) + "h" + strconv.Itoa(int(m)) + "m"
}

// fmtShare formats a share of enlistments as a percentage: 40%, 0.125%.
func fmtShare(share float64) string { return trimFloat(share*100, 3) + "%" }

// fmtLeft says how long a pause has left, to the second once it is
// over one: "2m30s", "45s", "250ms".
func fmtLeft(d time.Duration) string {
	if d >= time.Second {
		d = d.Round(time.Second)
	}
	return fmtDuration(d)
}

// fmtAgo says how long ago something happened: "just now", "3s ago",
// "4m ago", "2h ago", "3d ago".
func fmtAgo(d time.Duration) string {
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s ago"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h ago"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d ago"
}

// fmtAxis formats an axis label compactly: 0, 0.5, 750, 1.5k, 2M.
func fmtAxis(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return trimFloat(v/1e6, 2) + "M"
	case a >= 1e3:
		return trimFloat(v/1e3, 2) + "k"
	}
	return trimFloat(v, 2)
}

// fmtRate formats a rate with about three significant digits.
func fmtRate(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return trimFloat(v/1e6, 2) + "M"
	case a >= 1e4:
		return trimFloat(v/1e3, 1) + "k"
	case a >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case a >= 10:
		return trimFloat(v, 1)
	}
	return trimFloat(v, 2)
}

func trimFloat(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
