package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/worksteal/worksteal/inspect"
	"github.com/worksteal/worksteal/queue"
)

// sourceNote says where the numbers come from: Redis, not the processes.
const sourceNote = "what Redis holds now; each process's own counts (slices run, skipped, failed, their durations) are on its dashboard and in its metrics"

func cmdStats(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(c, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	qs, err := c.in.Queues(ctx)
	if err != nil {
		return err
	}
	js, err := c.in.Jobs(ctx)
	if err != nil {
		return err
	}
	if len(qs)+len(js) == 0 {
		return emptyPrefix(c.g.prefix)
	}
	policy, warning := c.eviction(ctx)
	type jobsSummary struct {
		Registered int `json:"registered"`
		Running    int `json:"running"`
		Paused     int `json:"paused"`
	}
	var sum jsonDepth
	var jobs jobsSummary
	doc := struct {
		Prefix          string       `json:"prefix"`
		Source          string       `json:"source"`
		Queues          []jsonQueue  `json:"queues"`
		Total           *jsonDepth   `json:"total"`
		Jobs            *jobsSummary `json:"jobs"`
		EvictionPolicy  string       `json:"eviction_policy"` // "" if unread
		EvictionWarning string       `json:"eviction_warning,omitempty"`
	}{Prefix: c.g.prefix, Source: sourceNote, Queues: []jsonQueue{}, Total: &sum, Jobs: &jobs,
		EvictionPolicy: policy, EvictionWarning: warning}
	for _, q := range qs {
		jq := queueOf(q)
		doc.Queues = append(doc.Queues, jq)
		sum.Pending += jq.Depth.Pending
		sum.Leased += jq.Depth.Leased
		sum.Expired += jq.Depth.Expired
		sum.Delayed += jq.Depth.Delayed
		sum.Due += jq.Depth.Due
		sum.Dead += jq.Depth.Dead
		sum.OldestPendingMS = max(sum.OldestPendingMS, jq.Depth.OldestPendingMS)
	}
	jobs.Registered = len(js)
	for _, j := range js {
		if j.Lock.Running {
			jobs.Running++
		}
		if j.Lock.Paused {
			jobs.Paused++
		}
	}
	if c.g.json {
		return c.json(doc)
	}
	rows := [][]string{}
	for _, q := range doc.Queues {
		rows = append(rows, depthRow(q.Name, q.Depth))
	}
	if len(qs) > 1 {
		rows = append(rows, depthRow("(all)", sum))
	}
	fmt.Fprintf(c.out, "prefix %s: %s.\n\n", c.g.prefix, sourceNote)
	if err := c.table("QUEUE\tPENDING\tLEASED\tEXPIRED\tDELAYED\tDUE\tDEAD\tOLDEST PENDING", rows); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "\njobs: %d registered, %d running, %d paused\n", jobs.Registered, jobs.Running, jobs.Paused)
	switch {
	case warning != "":
		_, err = fmt.Fprintf(c.out, "\nWARNING: maxmemory-policy %s: %s\n", policy, warning)
	case policy == "":
		_, err = fmt.Fprintln(c.out, "redis: maxmemory-policy unknown (INFO memory refused or silent); make sure it is noeviction (docs/redis.md)")
	default:
		_, err = fmt.Fprintf(c.out, "redis: maxmemory-policy %s\n", policy)
	}
	return err
}

// eviction reads the server's maxmemory-policy with INFO memory, as the
// recruiter does, and what it may evict of the fleet's keys; "" if the
// server does not say (on a cluster, the node the client picks).
func (c *cli) eviction(ctx context.Context) (policy, warning string) {
	info, err := c.rdb.Info(ctx, "memory").Result()
	if err != nil {
		return "", ""
	}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == "maxmemory_policy" {
			policy = v
		}
	}
	switch {
	case strings.HasPrefix(policy, "allkeys-"):
		warning = "at maxmemory Redis may evict any key: queued items, results and dead letters are lost, and job locks too " +
			"(a job may run twice at once); set noeviction (docs/redis.md)"
	case strings.HasPrefix(policy, "volatile-"):
		warning = "at maxmemory Redis may evict keys with a TTL: job locks, pauses, unique keys and results " +
			"(queued items and dead letters are safe); set noeviction (docs/redis.md)"
	}
	return policy, warning
}

func depthRow(name string, d jsonDepth) []string {
	oldest := "-"
	if d.OldestPendingMS > 0 {
		oldest = (time.Duration(d.OldestPendingMS) * time.Millisecond).Round(time.Millisecond).String()
	}
	return []string{name, count(d.Pending), count(d.Leased), count(d.Expired), count(d.Delayed), count(d.Due), count(d.Dead), oldest}
}

func cmdQueues(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(c, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	qs, err := c.in.Queues(ctx)
	if err == nil {
		err = c.orEmpty(ctx, len(qs))
	}
	if err != nil {
		return err
	}
	out := []jsonQueue{}
	rows := [][]string{}
	for _, q := range qs {
		jq := queueOf(q)
		out = append(out, jq)
		rows = append(rows, append(depthRow(q.Name, jq.Depth), q.Lease.String(), strconv.Itoa(q.MaxAttempts), q.ResultRetention.String()))
	}
	if c.g.json {
		return c.json(out)
	}
	return c.table("QUEUE\tPENDING\tLEASED\tEXPIRED\tDELAYED\tDUE\tDEAD\tOLDEST PENDING\tLEASE\tMAX ATTEMPTS\tRETENTION", rows)
}

func cmdJobs(ctx context.Context, c *cli, args []string) error {
	return listJobs(ctx, c, args, false)
}

func cmdSchedules(ctx context.Context, c *cli, args []string) error {
	return listJobs(ctx, c, args, true)
}

func listJobs(ctx context.Context, c *cli, args []string, schedules bool) error {
	if err := wantArgs(c, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	js, err := c.in.Jobs(ctx)
	if err == nil {
		err = c.orEmpty(ctx, len(js))
	}
	if err != nil {
		return err
	}
	out := []jsonJob{}
	rows := [][]string{}
	for _, j := range js {
		if schedules && j.Schedule == "" {
			continue
		}
		out = append(out, jobOf(j))
		now := j.Lock.Now
		state := jobState(j)
		switch state {
		case "paused":
			state += ", " + left(j.Lock.PausedUntil, now)
		case "resting":
			state += ", " + left(j.Lock.RestUntil, now)
		}
		fleet := "-"
		if j.Lock.Fleet > 0 {
			fleet = strconv.FormatFloat(j.Lock.Fleet, 'f', 1, 64)
		}
		if schedules {
			rows = append(rows, []string{j.Name, j.Schedule, ago(j.Lock.LastTick, now), ago(j.NextTick, now), state})
		} else {
			rows = append(rows, []string{j.Name, j.Pace(), j.Budget.String(), state, fleet})
		}
	}
	if c.g.json {
		return c.json(out)
	}
	fmt.Fprintf(c.out, "prefix %s: %s.\n\n", c.g.prefix, sourceNote)
	if schedules {
		return c.table("JOB\tSCHEDULE\tLAST TICK\tNEXT TICK\tSTATE", rows)
	}
	return c.table("JOB\tPACE\tBUDGET\tSTATE\tFLEET", rows)
}

func cmdTypes(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(c, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	ts, err := c.in.TaskTypes(ctx)
	if err == nil {
		err = c.orEmpty(ctx, len(ts))
	}
	if err != nil {
		return err
	}
	type jsonType struct {
		Queue string `json:"queue"`
		Type  string `json:"type"`
		Codec string `json:"codec"`
	}
	out := []jsonType{}
	rows := [][]string{}
	for _, t := range ts {
		out = append(out, jsonType{t.Queue, t.Type, t.Codec})
		rows = append(rows, []string{t.Queue, t.Type, t.Codec})
	}
	if c.g.json {
		return c.json(out)
	}
	return c.table("QUEUE\tTYPE\tCODEC", rows)
}

func cmdItems(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(c, args, 2, 2, "QUEUE STATE ("+stateNames()+")"); err != nil {
		return err
	}
	state, err := parseListState(args[1])
	if err != nil {
		return err
	}
	return listItems(ctx, c, args[0], state)
}

func cmdDeadList(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(c, args, 1, 1, "QUEUE"); err != nil {
		return err
	}
	return listItems(ctx, c, args[0], inspect.StateDead)
}

func listItems(ctx context.Context, c *cli, queue string, state inspect.State) error {
	p, err := c.in.Items(ctx, queue, state, c.o.offset, c.o.limit)
	if err != nil {
		return err
	}
	if c.g.json {
		doc := struct {
			Queue  string     `json:"queue"`
			State  string     `json:"state"`
			Offset int        `json:"offset"`
			Total  int64      `json:"total"`
			Items  []jsonItem `json:"items"`
		}{queue, state.String(), p.Offset, p.Total, []jsonItem{}}
		for _, it := range p.Items {
			doc.Items = append(doc.Items, itemOf(it))
		}
		return c.json(doc)
	}
	now := time.Now()
	rows := [][]string{}
	for _, it := range p.Items {
		what := preview(it.Payload, 40)
		if it.Task != nil {
			what = it.Task.Type + " " + preview(it.Task.Args, 40)
		}
		rows = append(rows, []string{it.ID, ago(it.At, now), strconv.Itoa(it.Attempts), preview([]byte(it.Cause), 50), what})
	}
	fmt.Fprintf(c.out, "%s items of %s: %d to %d of %d, oldest first\n\n", state, queue,
		min(int64(p.Offset+1), p.Total), int64(p.Offset+len(p.Items)), p.Total)
	return c.table("ID\tSINCE\tATTEMPTS\tCAUSE\tPAYLOAD", rows)
}

func cmdDeadAct(ctx context.Context, c *cli, args []string, verb string,
	byID func(context.Context, string, ...string) (int, error), all func(context.Context, string, int) (int, error)) (err error) {
	if len(args) == 0 {
		return usagef("dead %s takes QUEUE and ids, or QUEUE --all", verb)
	}
	queue, ids := args[0], args[1:]
	given := len(ids)
	var n int
	var missing []string
	switch {
	case c.o.all && len(ids) > 0:
		return usagef("dead %s: ids or --all, not both", verb)
	case c.o.max != 0 && !c.o.all:
		return usagef("dead %s: --max goes with --all", verb)
	case c.o.all:
		n, err = all(ctx, queue, c.o.max)
	case len(ids) == 0:
		return usagef("dead %s %s: name the ids, or --all", verb, queue)
	default:
		// The ids that are no dead letter of the queue, read first: the
		// scripts skip them and count only what they moved.
		if missing, err = c.notDead(ctx, queue, ids); err != nil {
			return err
		}
		for len(ids) > 0 && err == nil {
			chunk := ids[:min(len(ids), 1000)]
			ids = ids[len(chunk):]
			var k int
			k, err = byID(ctx, queue, chunk...)
			n += k
		}
	}
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		defer func() {
			if err == nil {
				others := ""
				if len(missing) < given {
					others = fmt.Sprintf(" (%d of %d ids; the others were done)", len(missing), given)
				}
				err = fmt.Errorf("%w: dead %s %s: no dead letter of %s%s: %s",
					inspect.ErrNotFound, verb, queue, queue, others, strings.Join(missing, ", "))
			}
		}()
	}
	if c.g.json {
		return c.json(struct {
			Queue  string `json:"queue"`
			Action string `json:"action"`
			Count  int    `json:"count"`
		}{queue, verb, n})
	}
	_, err = fmt.Fprintf(c.out, "%s: %s %d dead letters\n", queue, map[string]string{"retry": "moved back to pending", "purge": "deleted"}[verb], n)
	return err
}

// notDead returns the ids that are not dead letters of queue now, each
// with what it is instead ("nosuch (not found)", "abc (pending)"): one
// read per id, an operator's handful.
func (c *cli) notDead(ctx context.Context, queue string, ids []string) ([]string, error) {
	var out []string
	for _, id := range ids {
		it, err := c.in.Item(ctx, queue, id)
		switch {
		case errors.Is(err, inspect.ErrNotFound):
			out = append(out, id+" (not found)")
		case err != nil:
			return nil, err
		case it.State != inspect.StateDead:
			out = append(out, id+" ("+it.State.String()+")")
		}
	}
	return out, nil
}

func cmdPause(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(c, args, 1, 2, "JOB [FOR]"); err != nil {
		return err
	}
	d := pauseDefault
	if len(args) == 2 {
		var err error
		if d, err = parseFor(args[1]); err != nil {
			return err
		}
	}
	if err := c.in.Pause(ctx, args[0], d); err != nil {
		return err
	}
	return c.jobResult(ctx, args[0], "paused for "+d.String())
}

func cmdResume(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(c, args, 1, 1, "JOB"); err != nil {
		return err
	}
	if err := c.in.Resume(ctx, args[0]); err != nil {
		return err
	}
	return c.jobResult(ctx, args[0], "resumed")
}

// jobResult prints the job as Redis now holds it.
func (c *cli) jobResult(ctx context.Context, name, what string) error {
	j, err := c.in.Job(ctx, name)
	if err != nil {
		return err
	}
	if c.g.json {
		return c.json(jobOf(j))
	}
	_, err = fmt.Fprintf(c.out, "%s %s, fleet-wide: processes learn of it at their next visit to its lock\n", name, what)
	return err
}

func cmdTaskShow(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(c, args, 1, 1, "ID"); err != nil {
		return err
	}
	var it inspect.Item
	var err error
	if c.o.queue != "" {
		it, err = c.in.Item(ctx, c.o.queue, args[0])
	} else {
		it, err = c.in.FindItem(ctx, args[0])
	}
	if err != nil {
		return err
	}
	if c.g.json {
		return c.json(itemOf(it))
	}
	rows := [][]string{{"id", it.ID}, {"queue", it.Queue}, {"state", it.State.String()}}
	if !it.At.IsZero() {
		rows = append(rows, []string{"since", it.At.UTC().Format(time.RFC3339Nano) + " (" + ago(it.At, time.Now()) + ")"})
	}
	rows = append(rows, []string{"attempts", strconv.Itoa(it.Attempts)})
	if it.MaxAttempts > 0 {
		rows = append(rows, []string{"max attempts", strconv.Itoa(it.MaxAttempts)})
	}
	if it.Cause != "" {
		rows = append(rows, []string{"cause", preview([]byte(it.Cause), 200)})
	}
	if t := it.Task; t != nil {
		rows = append(rows, []string{"type", t.Type}, []string{"codec", t.Codec}, []string{"args", preview(t.Args, 200)})
		if t.ChainSteps > 0 {
			rows = append(rows, []string{"chain", fmt.Sprintf("step %d of %d", t.ChainStep, t.ChainSteps)})
		}
	} else {
		label := "payload"
		if it.State == inspect.StateDone {
			label = "result"
		}
		rows = append(rows, []string{label, fmt.Sprintf("%s (%d bytes)", preview(it.Payload, 200), it.Size)})
	}
	return c.table("FIELD\tVALUE", rows)
}

func cmdTaskCancel(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(c, args, 1, 1, "ID"); err != nil {
		return err
	}
	r, err := c.in.Cancel(ctx, c.o.queue, args[0])
	finished := errors.Is(err, queue.ErrFinished)
	if err != nil && !finished {
		return err
	}
	if c.g.json {
		return c.json(struct {
			ID       string `json:"id"`
			Queue    string `json:"queue"`
			Canceled int    `json:"canceled"`
			Running  int    `json:"running"`
			Finished bool   `json:"finished"`
		}{args[0], r.Queue, r.Items, r.Running, finished})
	}
	switch {
	case finished:
		_, err = fmt.Fprintf(c.out, "%s: %s: already finished (acked or dead): nothing canceled\n", r.Queue, args[0])
	case r.Items == 0:
		_, err = fmt.Fprintf(c.out, "%s: %s: canceled before\n", r.Queue, args[0])
	default:
		_, err = fmt.Fprintf(c.out, "%s: %s: canceled %d items, %d of them running (their handlers' contexts end within about 100ms)\n",
			r.Queue, args[0], r.Items, r.Running)
	}
	return err
}
