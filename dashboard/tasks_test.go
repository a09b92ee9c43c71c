package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

// fakeTasks is a TaskSource whose counts the test sets.
type fakeTasks struct {
	mu    sync.Mutex
	stats []tasks.TypeStats
	panic bool
}

func (f *fakeTasks) Stats() []tasks.TypeStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panic {
		panic("task source broke")
	}
	return append([]tasks.TypeStats(nil), f.stats...)
}

// WithTasks puts each type's counts in the JSON, under stable names, and
// in a table of the page whose rows flag retries and deaths; the counts
// are read at each request.
func TestDashboardTasks(t *testing.T) {
	t.Parallel()
	orders := &fakeTasks{stats: []tasks.TypeStats{
		{Type: "order.charge", Done: 1200, Retried: 3},
		{Type: "order.confirm", Running: 2, Done: 1180, Retried: 120, Dead: 1},
	}}
	mail := &fakeTasks{stats: []tasks.TypeStats{{Type: "mail<b>", Done: 7}}}
	d := manual(t, &fakeSource{}, dashboard.WithTasks(orders), dashboard.WithTasks(mail))

	doc := getJSON(t, d)
	want := []dashboard.DocumentTask{
		{Type: "order.charge", Done: 1200, Retried: 3},
		{Type: "order.confirm", Running: 2, Done: 1180, Retried: 120, Dead: 1},
		{Type: "mail<b>", Done: 7},
	}
	if len(doc.Tasks) != len(want) {
		t.Fatalf("tasks %+v, want %+v", doc.Tasks, want)
	}
	for i := range want {
		if doc.Tasks[i] != want[i] {
			t.Errorf("task %d = %+v, want %+v", i, doc.Tasks[i], want[i])
		}
	}
	raw := get(t, d, http.MethodGet, "/?format=json").Body.String()
	for _, key := range []string{`"tasks": [`, `"type": "order.confirm"`, `"running": 2`, `"done": 1180`, `"retried": 120`, `"dead": 1`} {
		if !strings.Contains(raw, key) {
			t.Errorf("the JSON lacks %s:\n%s", key, raw)
		}
	}

	orders.mu.Lock()
	orders.stats[0].Done = 1300 // read at each request, not sampled
	orders.mu.Unlock()
	page := get(t, d, http.MethodGet, "/", "Accept", browserAccept).Body.String()
	row := func(typ string) string {
		t.Helper()
		m := regexp.MustCompile(`(?s)<tr data-task="` + regexp.QuoteMeta(typ) + `".*?</tr>`).FindString(page)
		if m == "" {
			t.Fatalf("no row for task type %s in:\n%s", typ, page)
		}
		return m
	}
	charge, confirm := row("order.charge"), row("order.confirm")
	for _, want := range []string{`<td class="num done strong">1,300</td>`, `<td class="num retried warn">3</td>`, `<td class="num dead">0</td>`} {
		if !strings.Contains(charge, want) {
			t.Errorf("order.charge's row lacks %s:\n%s", want, charge)
		}
	}
	if strings.Contains(charge, "failing") {
		t.Errorf("order.charge's row is flagged, with no task dead:\n%s", charge)
	}
	for _, want := range []string{`class="failing"`, `<td class="num running">2</td>`, `<td class="num dead bad">1</td>`} {
		if !strings.Contains(confirm, want) {
			t.Errorf("order.confirm's row lacks %s:\n%s", want, confirm)
		}
	}
	if !strings.Contains(page, "mail&lt;b&gt;") || strings.Contains(page, "mail<b>") {
		t.Errorf("the task type mail<b> is not escaped on the page")
	}
	if i, j := strings.Index(page, `data-task="order.confirm"`), strings.Index(page, `data-task="mail&lt;b&gt;"`); i < 0 || j < i {
		t.Errorf("the sources' rows are not in the order of the options")
	}
}

// Without WithTasks the page has no task table and the JSON an empty
// list; with a source that has no type yet, the table says so.
func TestDashboardTasksEmpty(t *testing.T) {
	t.Parallel()
	d := manual(t, &fakeSource{})
	if page := get(t, d, http.MethodGet, "/").Body.String(); strings.Contains(page, "<h2>Tasks</h2>") {
		t.Errorf("a page without WithTasks shows a task table")
	}
	if doc := getJSON(t, d); doc.Tasks == nil || len(doc.Tasks) != 0 {
		t.Errorf("tasks %#v without WithTasks, want an empty list, not null", doc.Tasks)
	}
	d = manual(t, &fakeSource{}, dashboard.WithTasks(tasks.NewMux()))
	if page := get(t, d, http.MethodGet, "/").Body.String(); !strings.Contains(page, "No task type is registered yet.") {
		t.Errorf("a page of a Mux without types lacks the empty table's note")
	}
	mux := tasks.NewMux()
	if err := tasks.Define[int, int]("resize").Handle(mux, func(context.Context, int) (int, error) { return 0, nil }); err != nil {
		t.Fatal(err)
	}
	d = manual(t, &fakeSource{}, dashboard.WithTasks(mux))
	if doc := getJSON(t, d); len(doc.Tasks) != 1 || doc.Tasks[0] != (dashboard.DocumentTask{Type: "resize"}) {
		t.Errorf("tasks of a Mux with resize = %+v, want resize at zero", doc.Tasks)
	}
}

// A nil task source is refused; one that panics fails the request, not
// the process.
func TestDashboardTasksInvalid(t *testing.T) {
	t.Parallel()
	var nilMux *tasks.Mux
	for _, src := range []dashboard.TaskSource{nil, nilMux} {
		if _, err := dashboard.NewManual(&fakeSource{}, dashboard.WithTasks(src)); !errors.Is(err, dashboard.ErrInvalidOption) {
			t.Errorf("WithTasks(%#v): error %v, want ErrInvalidOption", src, err)
		}
	}
	d := manual(t, &fakeSource{stats: recruiter.Stats{}}, dashboard.WithTasks(&fakeTasks{panic: true}))
	if rec := get(t, d, http.MethodGet, "/?format=json"); rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "task source panicked") {
		t.Errorf("a panicking task source: %d %s, want 500 naming it", rec.Code, rec.Body)
	}
}
