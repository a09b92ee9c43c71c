package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// fakeQueue is a QueueSource that counts its reads.
type fakeQueue struct {
	name  string
	depth queue.Depth
	err   error
	reads atomic.Int64
}

func (q *fakeQueue) Name() string { return q.name }
func (q *fakeQueue) Depth(context.Context) (queue.Depth, error) {
	q.reads.Add(1)
	return q.depth, q.err
}

// The queues' table shows each queue's depth by state, its oldest wait
// and its dead letters, flagged; a failed read says so in its row. One
// reading serves the requests of queueFresh.
func TestDashboardQueues(t *testing.T) {
	t.Parallel()
	mail := &fakeQueue{name: "mail", depth: queue.Depth{Pending: 1200, Parked: 3, Leased: 4, Expired: 1, Delayed: 9, Due: 2, Dead: 17, OldestPending: 93 * time.Second}}
	broken := &fakeQueue{name: "broken", err: errors.New("dial tcp 127.0.0.1:6999: connect: connection refused")}
	now := t0
	d := manual(t, &fakeSource{stats: recruiter.Stats{}}, dashboard.WithQueues(mail, broken))
	d.SetClock(func() time.Time { return now })

	page := get(t, d, http.MethodGet, "/").Body.String()
	for _, want := range []string{
		`<tr data-queue="mail">`, `<td class="num pending strong">1,200<span class="aside">3 parked</span></td>`, `<td class="num oldest">1m33s</td>`,
		`<td class="num leased">4<span class="aside warn">1 expired</span></td>`, `<td class="num delayed">9<span class="aside">2 due</span></td>`,
		`<td class="num dead bad">17</td>`,
		`<tr data-queue="broken" class="failing">`, `not read: dial tcp 127.0.0.1:6999: connect: connection refused`, `<td class="num dead">0</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	doc := getJSON(t, d)
	if len(doc.Queues) != 2 || doc.Queues[0].Name != "mail" || doc.Queues[0].Pending != 1200 || doc.Queues[0].Dead != 17 ||
		doc.Queues[0].OldestPendingMS != 93000 || doc.Queues[1].Error == "" || !doc.Queues[0].ReadAt.Equal(t0) {
		t.Errorf("JSON queues %+v", doc.Queues)
	}
	if n := mail.reads.Load(); n != 1 {
		t.Errorf("%d reads for two requests within %v; want 1", n, 2*time.Second)
	}
	now = t0.Add(3 * time.Second)
	if doc := getJSON(t, d); mail.reads.Load() != 2 || !doc.Queues[0].ReadAt.Equal(now) {
		t.Errorf("%d reads, read at %v, 3 s on; want 2, now", mail.reads.Load(), doc.Queues[0].ReadAt)
	}

	// Without WithQueues: no table, an empty list in JSON.
	bare := manual(t, &fakeSource{})
	if page := get(t, bare, http.MethodGet, "/").Body.String(); strings.Contains(page, `table class="queues"`) {
		t.Error("a table of queues without WithQueues")
	}
	if raw := get(t, bare, http.MethodGet, "/?format=json").Body.String(); !strings.Contains(raw, `"queues": []`) {
		t.Error(`the JSON lacks "queues": []`)
	}
	if _, err := dashboard.New(&fakeSource{}, dashboard.WithQueues((*queue.Queue)(nil))); !errors.Is(err, dashboard.ErrInvalidOption) {
		t.Errorf("a nil queue: %v; want ErrInvalidOption", err)
	}
}
