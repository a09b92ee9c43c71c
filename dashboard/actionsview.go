package dashboard

import (
	"context"
	"fmt"
	"net/http"
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
	Cancel bool   // WithCancel: cancel buttons
	Jobs   []opsJob
	Queues []opsQueue
	Queue  *opsQueueView // the queue chosen with ?queue=NAME
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
	ID, At, Attempts, Cause, Type, Flow, Size, Preview string
	Cut                                                bool // the preview is cut
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
	v := &actionsView{Token: mintToken(a.key, a.who(r), d.now()), Cancel: a.cancel != nil, Done: doneText(q.Get("done"), q.Get("n"))}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	fail := func(err error) *actionsView {
		v.Error = err.Error()
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
	}
	return v
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
		}
	}
	if join, n, ok := strings.Cut(it.ID, "."); ok {
		o.Flow = "fan-out " + join + ", child " + n
	}
	// html/template escapes it; invalid UTF-8 is shown as U+FFFD.
	o.Cut = len(payload) > previewShown || len(it.Payload) < it.Size
	o.Preview = strings.ToValidUTF8(string(payload[:min(len(payload), previewShown)]), "\uFFFD")
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
