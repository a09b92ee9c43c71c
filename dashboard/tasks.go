package dashboard

import (
	"fmt"

	"github.com/worksteal/worksteal/tasks"
)

// TaskSource is what a [WithTasks] table shows; *tasks.Mux is one.
type TaskSource interface {
	Stats() []tasks.TypeStats
}

// WithTasks adds a table of task types to the page, and their counts to
// the [Document]: for each type the attempts done, retried, dead and
// running, as [tasks.Mux.Stats] returns them, read at each request (the
// counts are atomics: no Redis call). Given more than once, the tables of
// the sources follow one another, in the order of the options.
func WithTasks(src TaskSource) Option {
	return optionFunc(func(c *config) { c.tasks = append(c.tasks, src) })
}

// DocumentTask is one task type's counts in this process; see
// [tasks.TypeStats].
type DocumentTask struct {
	Type    string `json:"type"`
	Running int64  `json:"running"`
	Done    uint64 `json:"done"`
	Retried uint64 `json:"retried"`
	Dead    uint64 `json:"dead"`
}

// taskRows reads the task sources; a source that panics fails the
// request, as the recruiter's Stats does.
func (d *Dashboard) taskRows() (rows []DocumentTask, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("dashboard: a task source panicked: %v", v)
		}
	}()
	rows = []DocumentTask{}
	for _, src := range d.cfg.tasks {
		for _, s := range src.Stats() {
			rows = append(rows, DocumentTask{Type: s.Type, Running: s.Running, Done: s.Done, Retried: s.Retried, Dead: s.Dead})
		}
	}
	return rows, nil
}

// taskView is one row of the page's task table.
type taskView struct {
	Type, Running, Done, Retried, Dead string
	Failing                            bool // some attempts died: the row is flagged
}

func taskViews(rows []DocumentTask) []taskView {
	views := make([]taskView, 0, len(rows))
	for _, r := range rows {
		views = append(views, taskView{
			Type: r.Type, Running: fmtCount(uint64(max(r.Running, 0))), Done: fmtCount(r.Done),
			Retried: fmtCount(r.Retried), Dead: fmtCount(r.Dead), Failing: r.Dead > 0,
		})
	}
	return views
}
