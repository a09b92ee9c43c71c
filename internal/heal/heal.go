package heal

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
)

// reloadEvery is the shortest time between two reloads that Notice asks
// of one client: twice a second finds a promotion within half a second of
// the next failed call, for at most two CLUSTER SLOTS a second.
const reloadEvery = 500 * time.Millisecond

// healer holds the state of every ClusterClient that met a connection
// error. Its clock and reload are set apart for tests.
type healer struct {
	every  time.Duration
	now    func() time.Time
	reload func(*redis.ClusterClient)

	// clients maps a weak pointer to a client to its *client. A client
	// that is garbage collected takes its entry with it.
	clients sync.Map
}

// client is one ClusterClient's reload state.
type client struct {
	next    atomic.Int64 // unix ns before which no reload is asked
	reloads atomic.Uint64
}

var std = &healer{
	every: reloadEvery,
	now:   time.Now,
	// ReloadState only starts go-redis's own reload goroutine (LazyReload)
	// and returns; it ignores its context.
	reload: func(cc *redis.ClusterClient) { cc.ReloadState(context.Background()) },
}

// Notice looks at err, the result of a call on rdb: when rdb is a
// *redis.ClusterClient and err a connection error, it asks the client to
// reload its slot map, at most twice a second per client. It returns at
// once and never fails: the reload runs on go-redis's goroutine.
func Notice(rdb redis.Scripter, err error) { std.notice(rdb, err) }

// Reloads is how many reloads Notice has asked of rdb so far, for tests
// and their reports.
func Reloads(rdb redis.Scripter) uint64 {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return 0
	}
	if v, ok := std.clients.Load(weak.Make(cc)); ok {
		return v.(*client).reloads.Load()
	}
	return 0
}

func (h *healer) notice(rdb redis.Scripter, err error) {
	if err == nil {
		return
	}
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok || !connectionError(err) {
		return
	}
	c := h.state(cc)
	now := h.now().UnixNano()
	next := c.next.Load()
	if now < next || !c.next.CompareAndSwap(next, now+h.every.Nanoseconds()) {
		return // reloaded lately, or another call is asking right now
	}
	c.reloads.Add(1)
	h.reload(cc)
}

func (h *healer) state(cc *redis.ClusterClient) *client {
	key := weak.Make(cc)
	if v, ok := h.clients.Load(key); ok {
		return v.(*client)
	}
	v, loaded := h.clients.LoadOrStore(key, &client{})
	if !loaded {
		runtime.AddCleanup(cc, func(key weak.Pointer[redis.ClusterClient]) { h.clients.Delete(key) }, key)
	}
	return v.(*client)
}

// connectionError reports whether err says the server could not be
// reached or stopped answering, as a dead or unreachable master does:
// refused, reset or timed-out connections, and calls cut by their
// deadline (a master whose host is gone lets dials and reads time out).
// A server's error reply, redis.Nil and a cancelled call are not.
func connectionError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
