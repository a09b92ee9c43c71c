package tasks

import (
	"strings"
	"testing"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/taskenv"
)

// The queue's claims read a task's type from the start of its envelope
// (qstore.TypeOf mirrors the scripts' reading): every version and every
// length of type must read back as encoded.
func TestEnvelopeTypeAsTheQueueReadsIt(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"a", strings.Repeat("b", 127), strings.Repeat("c", 128), "resize.v2-x_y"} {
		alone := taskenv.Envelope{Type: typ, Codec: "json", Args: []byte(`{"x":1}`)}
		step := taskenv.Envelope{Type: typ, Codec: "json", Args: []byte(`1`), Chain: &taskenv.Chain{
			Step: 1, Steps: 2, Rest: []taskenv.Step{{Type: "next", Args: []byte(`2`)}},
		}}
		for _, e := range []taskenv.Envelope{alone, step} {
			if got := qstore.TypeOf(e.Encode()); got != typ {
				t.Errorf("TypeOf(envelope of %.20s…, chain %v) = %.20q, want the type", typ, e.Chain != nil, got)
			}
		}
	}
	for _, plain := range []string{"", "x", "\x01", "\x01\x00json", "\x03\x01a", "\x01\x05abc", "\x01\x81\x01" + strings.Repeat("a", 129)} {
		if got := qstore.TypeOf([]byte(plain)); got != "" {
			t.Errorf("TypeOf(%q) = %q, want none", plain, got)
		}
	}
}
