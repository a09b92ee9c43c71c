package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/worksteal/worksteal/inspect"
)

// The JSON documents, for scripts: field names are stable, durations in
// milliseconds, times in RFC 3339 (UTC), absent times omitted.

type jsonDepth struct {
	Pending         int64 `json:"pending"`
	Leased          int64 `json:"leased"`
	Expired         int64 `json:"expired"`
	Delayed         int64 `json:"delayed"`
	Due             int64 `json:"due"`
	Dead            int64 `json:"dead"`
	OldestPendingMS int64 `json:"oldest_pending_ms"`
}

type jsonQueue struct {
	Name              string     `json:"name"`
	LeaseMS           int64      `json:"lease_ms"`
	MaxAttempts       int        `json:"max_attempts"`
	ResultRetentionMS int64      `json:"result_retention_ms"`
	Registered        *time.Time `json:"registered,omitempty"`
	Depth             jsonDepth  `json:"depth"`
}

type jsonJob struct {
	Name         string     `json:"name"`
	Pace         string     `json:"pace"`
	BudgetMS     int64      `json:"budget_ms"`
	EveryMS      int64      `json:"every_ms,omitempty"`
	Rate         float64    `json:"rate,omitempty"`
	Schedule     string     `json:"schedule,omitempty"`
	State        string     `json:"state"` // idle, running, resting, paused
	Running      bool       `json:"running"`
	HeldUntil    *time.Time `json:"held_until,omitempty"`
	RestingUntil *time.Time `json:"resting_until,omitempty"`
	Paused       bool       `json:"paused"`
	PausedUntil  *time.Time `json:"paused_until,omitempty"`
	LastTick     *time.Time `json:"last_tick,omitempty"`
	NextTick     *time.Time `json:"next_tick,omitempty"`
	Fleet        float64    `json:"fleet,omitempty"`
	Registered   *time.Time `json:"registered,omitempty"`
}

type jsonTask struct {
	Type       string `json:"type"`
	Codec      string `json:"codec"`
	Args       string `json:"args"`
	ChainStep  int    `json:"chain_step,omitempty"`
	ChainSteps int    `json:"chain_steps,omitempty"`
}

type jsonItem struct {
	ID          string     `json:"id"`
	Queue       string     `json:"queue"`
	State       string     `json:"state"`
	At          *time.Time `json:"at,omitempty"`
	Attempts    int        `json:"attempts"`
	MaxAttempts int        `json:"max_attempts,omitempty"`
	Cause       string     `json:"cause,omitempty"`
	Size        int        `json:"size"`
	Payload     string     `json:"payload"` // its first bytes; invalid UTF-8 as U+FFFD
	Task        *jsonTask  `json:"task,omitempty"`
}

func toTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func depthOf(d inspect.Queue) jsonDepth {
	return jsonDepth{Pending: d.Depth.Pending, Leased: d.Depth.Leased, Expired: d.Depth.Expired, Delayed: d.Depth.Delayed,
		Due: d.Depth.Due, Dead: d.Depth.Dead, OldestPendingMS: d.Depth.OldestPending.Milliseconds()}
}

func queueOf(q inspect.Queue) jsonQueue {
	return jsonQueue{Name: q.Name, LeaseMS: q.Lease.Milliseconds(), MaxAttempts: q.MaxAttempts,
		ResultRetentionMS: q.ResultRetention.Milliseconds(), Registered: toTime(q.Registered), Depth: depthOf(q)}
}

func jobOf(j inspect.Job) jsonJob {
	l := j.Lock
	return jsonJob{Name: j.Name, Pace: j.Pace(), BudgetMS: j.Budget.Milliseconds(), EveryMS: j.Every.Milliseconds(),
		Rate: j.Rate, Schedule: j.Schedule, State: jobState(j), Running: l.Running, HeldUntil: toTime(l.HeldUntil),
		RestingUntil: toTime(l.RestUntil), Paused: l.Paused, PausedUntil: toTime(l.PausedUntil),
		LastTick: toTime(l.LastTick), NextTick: toTime(j.NextTick), Fleet: l.Fleet, Registered: toTime(j.Registered)}
}

func jobState(j inspect.Job) string {
	switch l := j.Lock; {
	case l.Paused:
		return "paused"
	case l.Running, l.Legacy:
		return "running"
	case !l.RestUntil.IsZero():
		return "resting"
	}
	return "idle"
}

func itemOf(it inspect.Item) jsonItem {
	out := jsonItem{ID: it.ID, Queue: it.Queue, State: it.State.String(), At: toTime(it.At), Attempts: it.Attempts,
		MaxAttempts: it.MaxAttempts, Cause: it.Cause, Size: it.Size, Payload: strings.ToValidUTF8(string(it.Payload), "\uFFFD")}
	if t := it.Task; t != nil {
		out.Task = &jsonTask{Type: t.Type, Codec: t.Codec, Args: strings.ToValidUTF8(string(t.Args), "\uFFFD"),
			ChainStep: t.ChainStep, ChainSteps: t.ChainSteps}
	}
	return out
}

func (c *cli) json(v any) error {
	enc := json.NewEncoder(c.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes rows aligned in columns.
func (c *cli) table(header string, rows [][]string) error {
	w := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, header)
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	return w.Flush()
}

// preview shows bytes to people: printable runes as they are, the others
// escaped as in Go (\n, \x00, \u2028), cut at n runes.
func preview(b []byte, n int) string {
	runes := []rune(strings.ToValidUTF8(string(b), "\uFFFD"))
	cut := len(runes) > n
	if cut {
		runes = runes[:n-1]
	}
	var sb strings.Builder
	for _, r := range runes {
		if unicode.IsPrint(r) && r != '\\' {
			sb.WriteRune(r)
		} else {
			q := strconv.QuoteRune(r)
			sb.WriteString(q[1 : len(q)-1])
		}
	}
	if cut {
		sb.WriteString("…")
	}
	return sb.String()
}

// ago says how long before now t was, or in how long it comes.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now)
	if d <= 0 {
		return (-d).Round(time.Second).String() + " ago"
	}
	return "in " + d.Round(time.Second).String()
}

// left says how long until t: "10m0s left".
func left(t, now time.Time) string {
	return t.Sub(now).Round(time.Second).String() + " left"
}

func count(n int64) string { return strconv.FormatInt(n, 10) }
