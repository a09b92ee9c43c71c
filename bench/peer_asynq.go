package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// asynqPeer is asynq on the run's redis-server (database 1), its queue
// "default", tasks of type "peer" with a JSON payload.
type asynqPeer struct {
	opt  asynq.RedisClientOpt
	rdb  *redis.Client // to empty its database between runs
	c    *asynq.Client
	insp *asynq.Inspector
}

func newAsynqPeer(addr string) *asynqPeer {
	opt := asynq.RedisClientOpt{Addr: addr, DB: 1}
	return &asynqPeer{opt: opt, c: asynq.NewClient(opt), insp: asynq.NewInspector(opt),
		rdb: redis.NewClient(&redis.Options{Addr: addr, DB: 1})}
}

func (p *asynqPeer) name() string { return "asynq" }

func (p *asynqPeer) close() { _ = p.c.Close(); _ = p.insp.Close(); _ = p.rdb.Close() }

// reset empties asynq's database and starts a new client: a client
// remembers the queues it registered and would not register them again.
func (p *asynqPeer) reset(ctx context.Context) error {
	if err := p.rdb.FlushDB(ctx).Err(); err != nil {
		return err
	}
	_ = p.c.Close()
	p.c = asynq.NewClient(p.opt)
	return nil
}

func (p *asynqPeer) enqueue(ctx context.Context, a peerArgs) error {
	payload, err := json.Marshal(a)
	if err != nil {
		return err
	}
	_, err = p.c.EnqueueContext(ctx, asynq.NewTask("peer", payload))
	return err
}

// enqueueBatch: asynq has no batch enqueue.
func (p *asynqPeer) enqueueBatch(context.Context, []peerArgs) error { return errUnsupported }

// call: asynq has no call that waits for a task's result.
func (p *asynqPeer) call(context.Context, peerArgs) error { return errUnsupported }

func (p *asynqPeer) queueInfo() (*asynq.QueueInfo, error) {
	qi, err := p.insp.GetQueueInfo("default")
	if errors.Is(err, asynq.ErrQueueNotFound) {
		return &asynq.QueueInfo{}, nil
	}
	return qi, err
}

func (p *asynqPeer) waiting(context.Context) (int64, error) {
	qi, err := p.queueInfo()
	if err != nil {
		return 0, err
	}
	return int64(qi.Pending), nil
}

func (p *asynqPeer) left(context.Context) (int64, error) {
	qi, err := p.queueInfo()
	if err != nil {
		return 0, err
	}
	return int64(qi.Pending + qi.Active + qi.Scheduled + qi.Retry + qi.Archived + qi.Aggregating), nil
}

// start runs an asynq server with r.workers goroutines (Concurrency), or
// with its defaults (Concurrency: the number of CPUs); its logs at error
// level only, which changes no work.
func (p *asynqPeer) start(_ context.Context, r peerRun, h peerHandler) (stop func() error, err error) {
	cfg := asynq.Config{LogLevel: asynq.ErrorLevel}
	if !r.defaults {
		cfg.Concurrency = r.workers
	}
	srv := asynq.NewServer(p.opt, cfg)
	mux := asynq.NewServeMux()
	mux.HandleFunc("peer", func(ctx context.Context, t *asynq.Task) error {
		var a peerArgs
		if err := json.Unmarshal(t.Payload(), &a); err != nil {
			return err
		}
		h(ctx, a)
		return nil
	})
	if err := srv.Start(mux); err != nil {
		return nil, err
	}
	return func() error { srv.Shutdown(); return nil }, nil
}
