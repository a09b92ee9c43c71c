package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/inspect"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/registry"
	"github.com/worksteal/worksteal/queue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// bundle: a Redis, a prefix unique to the test, and an Inspector of it.
type bundle struct {
	rdb    *redis.Client
	prefix string
	in     *inspect.Inspector
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{rdb: redistest.Start(t).Client(t), prefix: redistest.Prefix(t)}
	var err error
	if b.in, err = inspect.New(b.rdb, inspect.Config{Prefix: b.prefix}); err != nil {
		t.Fatal(err)
	}
	return b
}

// queue makes a queue and writes the registry as a recruiter would.
func (b *bundle) queue(t *testing.T, name string, cfg queue.Config) *queue.Queue {
	t.Helper()
	cfg.Prefix = b.prefix
	q, err := queue.New(b.rdb, name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.writeRegistry(t)
	return q
}

func (b *bundle) writeRegistry(t *testing.T, jobs ...registry.Job) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := registry.Write(ctx, b.rdb, b.prefix, jobs); err != nil {
		t.Fatal(err)
	}
}
