package tasks_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/worksteal/worksteal/tasks"
)

// FuzzDecode: the envelope decoder never panics on any payload, every
// error it returns wraps ErrDecode, and what it accepts encodes back to
// the very same bytes (so an envelope has one reading).
func FuzzDecode(f *testing.F) {
	for _, seed := range [][]byte{
		tasks.EncodeEnvelope("add", "json", []byte(`{"A":1}`)),
		tasks.EncodeEnvelope("a", "b", nil),
		// A chain's step 1 of 2, then a step 2 of 3 under a unique key
		// whose arguments are the previous result.
		{2, 1, 'a', 1, 'b', 0, 0, 1, 2, 0, 0, 0, 1, '2', 1, 'c', '1'},
		{2, 1, 'a', 1, 'b', 2, 'i', 'd', 3, 'a', ':', 'k', 2, 3, 1, 1, 'r', 1, 1, 'c'},
		{}, {1}, {2, 1, 'a', 1, 'b'}, {3, 1, 'a', 1, 'b'}, {1, 0x80}, {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		{1, 3, 'a', ':', 'b', 4, 'j', 's', 'o', 'n'}, {1, 1, 'a', 9, 'j'},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		again, err := tasks.ReencodeEnvelope(b)
		if err != nil {
			if !errors.Is(err, tasks.ErrDecode) {
				t.Fatalf("error %v does not wrap ErrDecode", err)
			}
			return
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("decoded %q, which encodes to %q", b, again)
		}
	})
}
