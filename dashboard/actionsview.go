package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/worksteal/worksteal/inspect"
	"github.com/worksteal/worksteal/internal/names"
)

const (
	// refreshHeader marks the page's own refresh, which swaps <main>
	// only: the actions part is not read for it, so an open page costs
	// Redis nothing every 2 s, and a half-filled form is not wiped.
	refreshHeader = "X-Worksteal-Refresh"
	// itemsShown is how many items of each state the page lists.
	itemsShown = 50
	// previewShown caps the payload bytes the page shows of an item.
	previewShown = 256
	// readTimeout bounds the Redis reads of the actions part.
	readTimeout = 5 * time.Second
)

// actionsView is the operators' part of the page.
type actionsView struct {
	Token  string // the action token of this operator, in every form
	Error  string // reading the fleet failed: the page says so
	Done   string // what the last action did, from a fixed vocabulary
	Cancel bool   // cancel buttons
	Jobs   []opsJob
	Queues []opsQueue
	Queue  *opsQueueView // the queue chosen with ?queue=NAME
	Flow   *opsFlow      // its chain or fan-out chosen with &chain=ID or &fanout=ID
}

// opsFlow is a chain's or a fan-out's progress, read-only.
type opsFlow struct {
	Kind, ID, State, Cause, Summary, Error string
	Steps                                  []opsStep // a chain's
}

type opsStep struct {
	N           int
	State, Item string
}

type opsJob struct {
	Name, Pace, PausedUntil string
	Paused, Running         bool
}

type opsQueue struct {
	Name                           string
	Pending, Leased, Delayed, Dead int64
	Selected                       bool
}

type opsQueueView struct {
	Name                   string
	Dead, Delayed, Pending opsItems
}

type opsItems struct {
	Total int64
	Items []opsItem
}

type opsItem struct {
	ID, At, Attempts, Cause, Type, Size, Preview string
	Flow, FlowLink                               string // a chain's step, a fan-out's child: the link shows its progress
	Cut                                          bool   // the preview is cut
}

// doneText says what the action named by ?done= did; "" for anything
// else, so that a crafted link cannot put its own words on the page.
func doneText(action, n string) string {
	count, err := strconv.Atoi(n)
	if err != nil || count < 0 {
		return ""
	}
	switch action {
	case "pause":
		return "Job paused fleet-wide."
	case "resume":
		return "Job resumed fleet-wide."
	case "retry", "retry-all":
		return fmt.Sprintf("%d dead letters sent back to pending.", count)
	case "purge", "purge-all":
		return fmt.Sprintf("%d dead letters purged.", count)
	case "run":
		return fmt.Sprintf("%d delayed items made pending now.", count)
	case "cancel":
		return fmt.Sprintf("%d items cancelled.", count)
	}
	return ""
}

func (d *Dashboard) actionsView(r *http.Request) *actionsView {
	a := d.cfg.actions
	q := r.URL.Query()
	actor := a.who(r)
	if actor == "" {
		return &actionsView{Error: errNoActor.Error()}
	}
	v := &actionsView{Token: mintToken(a.key, actor, d.now()), Cancel: a.cancel != nil, Done: doneText(q.Get("done"), q.Get("n"))}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	fail := func(err error) *actionsView {
		v.Error = "Reading the fleet failed: " + err.Error()
		return v
	}
	jobs, err := a.in.Jobs(ctx)
	if err != nil {
		return fail(err)
	}
	for _, j := range jobs {
		oj := opsJob{Name: j.Name, Pace: j.Pace(), Paused: j.Lock.Paused, Running: j.Lock.Running}
		if j.Lock.Paused {
			oj.PausedUntil = j.Lock.PausedUntil.Local().Format(time.RFC3339)
		}
		v.Jobs = append(v.Jobs, oj)
	}
	queues, err := a.in.Queues(ctx)
	if err != nil {
		return fail(err)
	}
	chosen := q.Get("queue")
	if names.Check(chosen) != nil {
		chosen = ""
	}
	for _, qu := range queues {
		v.Queues = append(v.Queues, opsQueue{Name: qu.Name, Pending: qu.Depth.Pending, Leased: qu.Depth.Leased,
			Delayed: qu.Depth.Delayed, Dead: qu.Depth.Dead, Selected: qu.Name == chosen})
		if qu.Name != chosen {
			continue
		}
		qv := &opsQueueView{Name: chosen}
		for _, part := range []struct {
			state inspect.State
			into  *opsItems
		}{{inspect.StateDead, &qv.Dead}, {inspect.StateDelayed, &qv.Delayed}, {inspect.StatePending, &qv.Pending}} {
			page, err := a.in.Items(ctx, chosen, part.state, 0, itemsShown)
			if err != nil {
				return fail(err)
			}
			part.into.Total = page.Total
			for _, it := range page.Items {
				part.into.Items = append(part.into.Items, opsItemOf(it))
			}
		}
		v.Queue = qv
		v.Flow = flowView(ctx, a.in, chosen, q.Get("chain"), q.Get("fanout"))
	}
	return v
}

// flowView reads the chain or the fan-out the query names, if any.
func flowView(ctx context.Context, in *inspect.Inspector, queue, chain, fanout string) *opsFlow {
	switch {
	case chain != "" && validID(chain) && !strings.Contains(chain, "."):
		f := &opsFlow{Kind: "chain", ID: chain}
		c, err := in.Chain(ctx, queue, chain)
		if err != nil {
			f.Error = err.Error()
			return f
		}
		f.State, f.Cause = c.State.String(), c.Cause
		f.Summary = fmt.Sprintf("step %d of %d", c.Step, c.Steps)
		for n := 1; n <= c.Steps; n++ {
			st := opsStep{N: n, State: "waiting"}
			switch {
			case n < c.Step || c.State == inspect.FlowDone:
				st.State = "done"
			case n == c.Step:
				st.State, st.Item = c.State.String(), c.Current
			case c.State == inspect.FlowCanceled: // the steps after never run
				st.State = c.State.String()
			}
			f.Steps = append(f.Steps, st)
		}
		return f
	case fanout != "" && validID(fanout) && !strings.Contains(fanout, "."):
		f := &opsFlow{Kind: "fan-out", ID: fanout}
		j, err := in.FanOut(ctx, queue, fanout)
		if err != nil {
			f.Error = err.Error()
			return f
		}
		f.State, f.Cause = j.State.String(), j.Cause
		rest := "running or waiting"
		if j.State == inspect.FlowCanceled {
			rest = "canceled"
		}
		f.Summary = fmt.Sprintf("%d children: %d done, %d dead, %d %s", j.Children, j.Done, j.Dead, j.Children-j.Done-j.Dead, rest)
		return f
	}
	return nil
}

func opsItemOf(it inspect.Item) opsItem {
	o := opsItem{ID: it.ID, Attempts: strconv.Itoa(it.Attempts), Cause: it.Cause, Size: strconv.Itoa(it.Size) + " B"}
	if !it.At.IsZero() {
		o.At = it.At.Local().Format("2006-01-02 15:04:05")
	}
	payload := it.Payload
	if it.Task != nil {
		o.Type = it.Task.Type
		payload = it.Task.Args
		if it.Task.ChainSteps > 0 {
			o.Flow = fmt.Sprintf("chain step %d of %d", it.Task.ChainStep, it.Task.ChainSteps)
			o.FlowLink = "?" + url.Values{"queue": {it.Queue}, "chain": {it.Task.Chain}}.Encode() + "#flow"
		}
	}
	if join, n, ok := strings.Cut(it.ID, "."); ok {
		o.Flow = "fan-out child " + n
		o.FlowLink = "?" + url.Values{"queue": {it.Queue}, "fanout": {join}}.Encode() + "#flow"
	}
	// html/template escapes it; ServeHTTP shows invalid UTF-8 as U+FFFD.
	o.Cut = len(payload) > previewShown || len(it.Payload) < it.Size
	o.Preview = string(payload[:min(len(payload), previewShown)])
	return o
}

// itemsTable is what the "items" template renders: one state's items
// and the view they belong to.
type itemsTable struct {
	View  *actionsView
	Items []opsItem
	State string
}

func itemsOf(v *actionsView, items []opsItem, state string) itemsTable {
	return itemsTable{View: v, Items: items, State: state}
}
