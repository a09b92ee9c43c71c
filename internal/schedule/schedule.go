package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser reads 5-field expressions, an optional leading seconds field,
// and descriptors (@hourly, @daily, …); CRON_TZ= or TZ= before them
// names the time zone (default UTC).
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Schedule is a parsed cron expression. The zero Schedule is not one:
// make it with [Parse].
type Schedule struct {
	expr string
	spec *cron.SpecSchedule
	gap  time.Duration
}

// Parse parses expr, and refuses what cannot be a fleet's shared ticks:
// @every (its ticks count from each process's start: use Every), and a
// schedule with no tick in the next five years.
func Parse(expr string) (s Schedule, err error) {
	defer func() {
		// The parser panics on some inputs (TZ=0): an error, never a crash.
		if v := recover(); v != nil {
			s, err = Schedule{}, fmt.Errorf("the parser failed on it: %v", v)
		}
	}()
	if strings.HasPrefix(strings.TrimSpace(expr), "@every") {
		return Schedule{}, errors.New("@every counts from each process's start, so processes disagree on its ticks: use Every")
	}
	if err := checkZone(expr); err != nil {
		return Schedule{}, err
	}
	parsed, err := parser.Parse(expr)
	if err != nil {
		return Schedule{}, err
	}
	if err := checkSteps(expr); err != nil {
		return Schedule{}, err
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return Schedule{}, errors.New("not a calendar schedule")
	}
	s = Schedule{expr: expr, spec: spec}
	t := time.Now()
	for i := range 4 {
		next := s.Next(t)
		if next.IsZero() {
			return Schedule{}, errors.New("it has no tick in the next five years")
		}
		if gap := next.Sub(t); i > 0 && (s.gap == 0 || gap < s.gap) {
			s.gap = gap
		}
		t = next
	}
	return s, nil
}

// checkZone refuses an empty CRON_TZ= or TZ=, which the parser reads as
// UTC: a zone left out by mistake would run its ticks hours off.
func checkZone(expr string) error {
	expr = strings.TrimSpace(expr)
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(expr, prefix); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return fmt.Errorf("%s names no time zone: name one (%sUTC for UTC)", prefix, prefix)
		}
	}
	return nil
}

// fieldSizes are the number of values of each field of a parsed
// expression, by its number of fields (seconds first when it has six).
var fieldSizes = map[int][]int{5: {60, 24, 31, 12, 7}, 6: {60, 60, 24, 31, 12, 7}}

// checkSteps refuses a step as long as its field or longer (*/60 in
// minutes, */24 in hours), which the parser accepts but which keeps only
// the first value: "every 70 seconds" would run once a minute. expr has
// been parsed.
func checkSteps(expr string) error {
	fields := strings.Fields(expr)
	if len(fields) > 0 && strings.Contains(fields[0], "TZ=") {
		fields = fields[1:]
	}
	sizes := fieldSizes[len(fields)] // none for a descriptor
	if len(fields) != len(sizes) {
		return nil
	}
	for i, field := range fields {
		for part := range strings.SplitSeq(field, ",") {
			_, stepText, ok := strings.Cut(part, "/")
			if step, err := strconv.Atoi(stepText); ok && err == nil && step >= sizes[i] {
				return fmt.Errorf("the step of %q keeps only its first value: a step must be under %d, the number of values of its field", part, sizes[i])
			}
		}
	}
	return nil
}

// String is the expression s was parsed from.
func (s Schedule) String() string { return s.expr }

// Gap is the shortest gap between its next ticks, as sampled by Parse.
func (s Schedule) Gap() time.Duration { return s.gap }

// Next is the first tick after t; zero if none within five years. A
// local time that a daylight-saving change repeats has one tick, the
// first; one that it skips has none that day.
func (s Schedule) Next(t time.Time) time.Time {
	n := s.spec.Next(t)
	if n.IsZero() {
		return n
	}
	loc := s.spec.Location
	if prev := t.In(loc); !t.IsZero() && sameWallClock(prev, n.In(loc)) {
		return s.spec.Next(n)
	}
	return n
}

func sameWallClock(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd && a.Hour() == b.Hour() && a.Minute() == b.Minute() && a.Second() == b.Second()
}

// Due is the latest tick after last and not after now, or zero if none
// is: after an outage, the latest of the missed ticks. It looks at most
// [ScanMax] ticks.
func (s Schedule) Due(last, now time.Time) time.Time {
	var due time.Time
	for t, i := s.Next(last), 0; !t.IsZero() && !t.After(now); t, i = s.Next(t), i+1 {
		due = t
		if i == ScanMax {
			// A dense schedule after a long outage: skip to the last gap.
			return s.Due(now.Add(-2*s.gap), now)
		}
	}
	return due
}

// ScanMax bounds the ticks that one walk along a schedule looks at.
const ScanMax = 10000
