package qstore

import (
	"testing"
	"time"
)

// IDTime reads back the ms that newID wrote, also from a fan-out child's
// id, and refuses ids of another form.
func TestGoIDTimeReadsNewID(t *testing.T) {
	before := time.Now().UnixMilli()
	id := newID()
	after := time.Now().UnixMilli()
	for _, s := range []string{id, id + ".3"} {
		got, ok := IDTime(s)
		if !ok || got.UnixMilli() < before || got.UnixMilli() > after {
			t.Errorf("IDTime(%s) = %v, %v; want in [%d, %d] ms", s, got.UnixMilli(), ok, before, after)
		}
	}
	for _, s := range []string{"", "job-1", id[:25], id + "x", "0123456789abcdefghijklmnop"} {
		if got, ok := IDTime(s); ok {
			t.Errorf("IDTime(%q) = %v, true; want false", s, got)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = IDTime(id) }); n != 0 {
		t.Errorf("IDTime allocates %v times", n)
	}
}
