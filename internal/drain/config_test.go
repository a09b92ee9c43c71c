package drain_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/worksteal/worksteal/internal/drain"
	"github.com/worksteal/worksteal/jobs"
)

// jobs.Drain and tasks' Mux.Job copy a jobs.DrainConfig into a Config
// field by field (Batching converts whole): a field added to one and not
// to the other fails here.
func TestConfigHasDrainConfigsFields(t *testing.T) {
	t.Parallel()
	fields := func(typ reflect.Type) []string {
		var fs []string
		for _, f := range reflect.VisibleFields(typ) {
			if f.Anonymous {
				fs = append(fs, f.Name)
			} else {
				fs = append(fs, f.Name+" "+f.Type.String())
			}
		}
		slices.Sort(fs)
		return fs
	}
	public, internal := fields(reflect.TypeFor[jobs.DrainConfig]()), fields(reflect.TypeFor[drain.Config]())
	if !slices.Equal(public, internal) {
		t.Fatalf("jobs.DrainConfig's fields %q, drain.Config's %q; want the same", public, internal)
	}
}
