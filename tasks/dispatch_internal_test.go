package tasks

import (
	"context"
	"testing"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/taskenv"
)

// BenchmarkDispatch is the Go side of one task without Redis: the Mux's
// handler from the claimed item to the result and the next step, as
// Drain calls it (tracing off: the otel global has no provider); "-bare"
// leaves out the tracing hook. "bytes" runs a handler of []byte through a codec that
// passes bytes through, so it is the dispatch alone (envelope, lookup,
// counts, the task's context); "json" adds encoding/json both ways.
func BenchmarkDispatch(b *testing.B) {
	result := []byte(`{"Sum":3,"Label":"a label of some size"}`)
	type addArgs struct {
		A, B  int
		Label string
	}
	type sum struct {
		Sum   int
		Label string
	}
	args := []byte(`{"A":1,"B":2,"Label":"a label of some size"}`)
	for _, c := range []struct {
		name  string
		codec Codec
		add   func(*Mux) error
	}{
		{"bytes", passCodec{}, func(m *Mux) error {
			return Define[[]byte, []byte]("add").Handle(m, func(context.Context, []byte) ([]byte, error) { return result, nil })
		}},
		{"json", jsonCodec{}, func(m *Mux) error {
			return Define[addArgs, sum]("add").Handle(m, func(_ context.Context, a addArgs) (sum, error) { return sum{a.A + a.B, a.Label}, nil })
		}},
	} {
		// "-bare" calls run without the tracing hook around it: the
		// difference is what tracing costs when it is off.
		for _, bare := range []bool{false, true} {
			name := c.name
			if bare {
				name += "-bare"
			}
			b.Run(name, func(b *testing.B) {
				m := NewMux(WithCodec(c.codec))
				if err := c.add(m); err != nil {
					b.Fatal(err)
				}
				it := qstore.Item{ID: "0123456789abcdef", Attempt: 1, MaxAttempts: 3, Payload: taskenv.Envelope{Type: "add", Codec: c.codec.Name(), Args: args}.Encode()}
				ctx, run := context.Background(), m.run
				b.ReportAllocs()
				for b.Loop() {
					var err error
					if bare {
						_, _, err = run(ctx, nil, it)
					} else {
						_, _, err = m.traced(ctx, nil, it, run)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// passCodec passes []byte through.
type passCodec struct{}

func (passCodec) Name() string { return "bytes" }

func (passCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }

func (passCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = data
	return nil
}
