package heal

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// refused is a real connection error: a call to a port nobody listens on.
func refused(t *testing.T) error {
	t.Helper()
	s := redistest.Start(t)
	rdb := s.Client(t)
	s.Kill()
	err := rdb.Ping(t.Context()).Err()
	if err == nil {
		t.Fatal("PING to a killed server succeeded")
	}
	return err
}

func TestConnectionErrors(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	rdb := s.Client(t)
	ctx := t.Context()
	errReply := rdb.Eval(ctx, "return redis.error_reply('ERR of the script')", nil).Err()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()

	paused := redistest.Start(t)
	pc := paused.Client(t)
	paused.Pause()
	t.Cleanup(paused.Resume) // after the client's Close, before the process's stop
	dctx, dcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer dcancel()
	hung := pc.Ping(dctx).Err()

	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused", refused(t), true},
		{"a hung server past the deadline", hung, true},
		{"redis.Nil", rdb.Get(ctx, "missing").Err(), false},
		{"an error reply", errReply, false},
		{"cancelled", rdb.Ping(cancelled).Err(), false},
		{"the client closed", closedClientErr(t, s), false},
	} {
		if tc.err == nil {
			t.Fatalf("%s: the call succeeded", tc.name)
		}
		if got := connectionError(tc.err); got != tc.want {
			t.Errorf("connectionError(%s: %v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func closedClientErr(t *testing.T, s *redistest.Server) error {
	c := redis.NewClient(s.Options())
	_ = c.Close()
	return c.Ping(t.Context()).Err()
}

// A counting healer on a clock the test moves.
func testHealer() (*healer, *atomic.Int64, *atomic.Int64) {
	var now, reloads atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	h := &healer{
		every:  reloadEvery,
		now:    func() time.Time { return time.Unix(0, now.Load()) },
		reload: func(*redis.ClusterClient) { reloads.Add(1) },
	}
	return h, &now, &reloads
}

func TestNoticeReloadsAtMostTwiceASecondPerClient(t *testing.T) {
	t.Parallel()
	h, now, reloads := testHealer()
	err := refused(t)
	s := redistest.Start(t)
	a := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{s.Addr()}})
	b := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{s.Addr()}})
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })

	for range 100 {
		h.notice(a, err)
	}
	if n := reloads.Load(); n != 1 {
		t.Fatalf("100 errors at once: %d reloads, want 1", n)
	}
	h.notice(b, err) // another client has its own pace
	if n := reloads.Load(); n != 2 {
		t.Fatalf("an error on a second client: %d reloads in all, want 2", n)
	}
	now.Add(int64(reloadEvery - time.Millisecond))
	h.notice(a, err)
	if n := reloads.Load(); n != 2 {
		t.Fatalf("499ms later: %d reloads, want still 2", n)
	}
	now.Add(int64(time.Millisecond))
	h.notice(a, err)
	if n := reloads.Load(); n != 3 {
		t.Fatalf("500ms later: %d reloads, want 3", n)
	}
	// Ten seconds of errors, one every 10ms: twice a second.
	for range 1000 {
		now.Add(int64(10 * time.Millisecond))
		h.notice(a, err)
	}
	if n := reloads.Load() - 3; n != 20 {
		t.Errorf("10s of errors: %d reloads, want 20", n)
	}
}

func TestNoticeLeavesOthersAlone(t *testing.T) {
	t.Parallel()
	h, _, reloads := testHealer()
	s := redistest.Start(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{s.Addr()}})
	t.Cleanup(func() { _ = cc.Close() })
	conn := refused(t)
	h.notice(s.Client(t), conn)                                  // not a cluster
	h.notice(cc, nil)                                            // no error
	h.notice(cc, redis.Nil)                                      // not a connection error
	h.notice(cc, errors.Join(errors.New("x"), context.Canceled)) // given up
	if n := reloads.Load(); n != 0 {
		t.Errorf("%d reloads, want 0", n)
	}
	if Scripter(s.Client(t)) == nil {
		t.Fatal("Scripter of a Client is nil")
	}
	if _, ok := Scripter(cc).(clusterScripter); !ok {
		t.Errorf("Scripter(ClusterClient) = %T, want the noticing wrapper", Scripter(cc))
	}
}

// Notice returns at once even when the reload it starts hangs: a
// synchronous CLUSTER SLOTS to this frozen server would take its 2s read
// timeout.
func TestNoticeNeverWaitsForTheReload(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{s.Addr()},
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	s.Pause()
	t.Cleanup(s.Resume) // lets go-redis's reload end before goleak looks
	err := refused(t)
	began := time.Now()
	Notice(cc, err)
	took := time.Since(began)
	if Reloads(cc) != 1 {
		t.Fatalf("Reloads = %d, want 1", Reloads(cc))
	}
	if took > time.Second {
		t.Errorf("Notice took %v: it waited for the reload", took)
	}
	t.Logf("Notice took %v", took)
}
