package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

// workerEnv carries a workerSpec (JSON) to a re-executed test binary.
const workerEnv = "QUEUE_TEST_WORKER"

type workerSpec struct {
	Addr, Prefix, Name, Log string
	Lease                   time.Duration
	Batch                   int
	Work                    time.Duration // per item, to make batches take a while
	Settle                  bool          // settle each batch at once, else Ack each item
}

// runWorker drains the queue like a real worker, logging each claim before
// working on it ("C id token deadline-ms"), each ack ("A id token"), each
// lost lease ("L id token") and each batch's end ("E"). It exits 0 when
// nothing is pending, leased or delayed.
func runWorker() int {
	var spec workerSpec
	if err := json.Unmarshal([]byte(os.Getenv(workerEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "worker spec:", err)
		return 2
	}
	rdb := redis.NewClient(&redis.Options{Addr: spec.Addr})
	defer rdb.Close()
	q, err := queue.New(rdb, spec.Name, queue.Config{Prefix: spec.Prefix, Lease: spec.Lease, MaxAttempts: 100})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log, err := os.OpenFile(spec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer log.Close()
	if err := work(q, spec, log); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

func work(q *queue.Queue, spec workerSpec, log *os.File) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		if _, err := qstore.Of(q).Tidy(ctx, 100); err != nil {
			return err
		}
		items, err := q.Claim(ctx, spec.Batch)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			s, err := q.Depth(ctx)
			if err != nil {
				return err
			}
			if s.Pending+s.Leased+s.Delayed == 0 {
				return nil
			}
			time.Sleep(5 * time.Millisecond) // a killed worker's leases have yet to expire
			continue
		}
		var b strings.Builder
		for _, it := range items {
			fmt.Fprintf(&b, "C %s %s %d\n", it.ID, it.Token, it.Deadline.UnixMilli())
		}
		if _, err := log.WriteString(b.String()); err != nil { // one write: whole lines survive a SIGKILL
			return err
		}
		var outcomes []queue.Settlement
		b.Reset()
		for _, it := range items {
			time.Sleep(spec.Work)
			o := queue.Settlement{Item: it, Result: append([]byte("r:"), it.Payload...)}
			if spec.Settle {
				outcomes = append(outcomes, o)
				continue
			}
			err := q.Ack(ctx, it, o.Result)
			switch {
			case err == nil:
				fmt.Fprintf(&b, "A %s %s\n", it.ID, it.Token)
			case errors.Is(err, queue.ErrLeaseLost):
				fmt.Fprintf(&b, "L %s %s\n", it.ID, it.Token)
			default:
				return err
			}
		}
		if spec.Settle {
			s, err := q.Settle(ctx, outcomes...)
			if err != nil {
				return err
			}
			lost := make(map[string]bool, len(s.Lost))
			for _, id := range s.Lost {
				lost[id] = true
			}
			for _, it := range items {
				kind := "A"
				if lost[it.ID] {
					kind = "L"
				}
				fmt.Fprintf(&b, "%s %s %s\n", kind, it.ID, it.Token)
			}
		}
		b.WriteString("E\n")
		if _, err := log.WriteString(b.String()); err != nil {
			return err
		}
	}
}
