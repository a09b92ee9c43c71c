package tasks

import (
	"slices"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/registry"
	"github.com/worksteal/worksteal/queue"
)

// noteTypes notes, for the registry that operators' tools list, the types
// m serves on q: read when a recruiter writes the registry, so types
// handled after the job was made are listed too.
func (m *Mux) noteTypes(q *queue.Queue) {
	st := qstore.Of(q)
	registry.NoteTypes(st.Client(), q.Config().Prefix, q.Name(), m.codec.Name(), func() []string {
		var types []string
		if table := m.handlers.Load(); table != nil {
			for typ := range *table {
				types = append(types, typ)
			}
		}
		slices.Sort(types)
		return types
	})
}
