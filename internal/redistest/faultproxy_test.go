package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFaultProxy: commands pass through; SetDelay makes replies late by at
// least the delay; Drop fails them; Heal restores them.
func TestFaultProxy(t *testing.T) {
	t.Parallel()
	s := Start(t)
	p := StartFaultProxy(t, s.Addr())
	opts := s.clientOptions()
	opts.Addr = p.Addr()
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	ctx := t.Context()

	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the proxy: %v", err)
	}
	const delay = 200 * time.Millisecond
	p.SetDelay(delay)
	began := time.Now()
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET with a delay = %q, %v", v, err)
	}
	if took := time.Since(began); took < delay {
		t.Fatalf("GET took %v through a proxy delaying replies by %v", took, delay)
	}
	short, cancel := context.WithTimeout(ctx, delay/4)
	err := c.Get(short, "k").Err()
	cancel()
	if err == nil {
		t.Fatal("GET with a deadline shorter than the delay succeeded")
	}

	p.Drop()
	for range 3 { // every pooled connection was cut, and new ones are
		if err := c.Ping(ctx).Err(); err == nil {
			t.Fatal("PING succeeded while the proxy drops connections")
		}
	}
	p.Heal()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Heal: %v", err)
	}
	if p.Accepted() < 2 {
		t.Fatalf("Accepted = %d, want the first connection and those after Drop", p.Accepted())
	}
}
