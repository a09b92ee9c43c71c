package ring_test

import (
	"slices"
	"testing"

	"github.com/worksteal/worksteal/internal/ring"
)

// Every length from empty to several times round, against a plain slice
// that keeps everything.
func TestRingKeepsTheLastValues(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 2, 3, 7} {
		r := ring.New[int](size)
		if r.Cap() != size {
			t.Fatalf("size %d: Cap() = %d", size, r.Cap())
		}
		var all []int
		for i := range 4*size + 1 {
			want := all[max(len(all)-size, 0):]
			if got := r.Slice(); got == nil || !slices.Equal(got, want) {
				t.Fatalf("size %d after %d adds: Slice() = %#v, want %v", size, i, got, want)
			}
			back := slices.Clone(want)
			slices.Reverse(back)
			if got := r.NewestFirst(); got == nil || !slices.Equal(got, back) {
				t.Fatalf("size %d after %d adds: NewestFirst() = %#v, want %v", size, i, got, back)
			}
			if r.Len() != len(want) {
				t.Fatalf("size %d after %d adds: Len() = %d, want %d", size, i, r.Len(), len(want))
			}
			r.Add(i * 10)
			all = append(all, i*10)
		}
	}
}

// What Slice returns is the caller's: changing it leaves the ring as it was.
func TestRingSliceIsACopy(t *testing.T) {
	t.Parallel()
	r := ring.New[string](2)
	r.Add("a")
	r.Add("b")
	got := r.Slice()
	got[0] = "changed"
	if again := r.Slice(); !slices.Equal(again, []string{"a", "b"}) {
		t.Fatalf("after changing a Slice: %v, want [a b]", again)
	}
}

func TestNewRejectsAnEmptyRing(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, -1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%d) did not panic", size)
				}
			}()
			ring.New[int](size)
		}()
	}
}

func TestAddDoesNotAllocate(t *testing.T) {
	r := ring.New[[4]string](16)
	v := [4]string{"a", "b", "c", "d"}
	if n := testing.AllocsPerRun(1000, func() { r.Add(v) }); n != 0 {
		t.Fatalf("Add allocates %v times, want 0", n)
	}
}

func BenchmarkAdd(b *testing.B) {
	r := ring.New[[4]string](128)
	v := [4]string{"a", "b", "c", "d"}
	b.ReportAllocs()
	for b.Loop() {
		r.Add(v)
	}
}
