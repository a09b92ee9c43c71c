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
		{}, {1}, {2, 1, 'a', 1, 'b'}, {1, 0x80}, {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		{1, 3, 'a', ':', 'b', 4, 'j', 's', 'o', 'n'}, {1, 1, 'a', 9, 'j'},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, codec, args, err := tasks.DecodeEnvelope(b)
		if err != nil {
			if !errors.Is(err, tasks.ErrDecode) {
				t.Fatalf("error %v does not wrap ErrDecode", err)
			}
			return
		}
		if again := tasks.EncodeEnvelope(typ, codec, args); !bytes.Equal(again, b) {
			t.Fatalf("decoded %q %q %q, which encodes to %q, not %q", typ, codec, args, again, b)
		}
	})
}
