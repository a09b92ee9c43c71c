package recruiter

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/joblock"
)

// A job's lock is one Redis hash, {prefix}:lock:{job}: the token of the
// slice that runs the job and until when it holds, until when the job
// rests or is paused, and what its mode keeps there (lock_acquire.lua says
// each field). Every assumption about that key lives in this file, but
// its name, its reading and its pause, which operators' tools share
// (internal/joblock); every step is a script that reads before it acts,
// with times from Redis's clock.
type jobLock struct {
	key    string
	ttl    time.Duration // of a running slice's lock: lockTTL(budget)
	slices int           // how many slices may run at once: the lock and slices-1 seats beside it
}

func newJobLock(prefix, name string, cfg JobConfig) jobLock {
	return jobLock{key: joblock.Key(prefix, name), ttl: lockTTL(cfg.Budget), slices: max(cfg.Slices, 1)}
}

// The scripts compare before they act; Run rather than RunRO, as
// EVALSHA_RO needs Redis 7 and the recruiter works with 6.2 too.
var (
	//go:embed lock_acquire.lua
	acquireSource string
	acquireScript = redis.NewScript(acquireSource)

	//go:embed lock_refresh.lua
	refreshSource string
	refreshScript = redis.NewScript(refreshSource)

	//go:embed lock_release.lua
	releaseSource string
	releaseScript = redis.NewScript(releaseSource)

	//go:embed lock_rest.lua
	restSource string
	restScript = redis.NewScript(restSource)

	//go:embed lock_seat.lua
	seatSource string
	seatScript = redis.NewScript(seatSource)
)

// errLockNotHeld: the lock was no longer this slice's (it expired, and
// another process may hold it).
var errLockNotHeld = errors.New("recruiter: lock no longer held")

// lockTTL is how long a job's lock lives while a slice of the given budget
// runs: the budget plus a margin for the round trips that take and release
// it, garbage-collection pauses and a job a little late to stop. A slice
// that overruns it has its lock extended while it runs; a crashed one holds
// its job for this long.
func lockTTL(budget time.Duration) time.Duration {
	return budget + max(budget/2, 250*time.Millisecond)
}

// lockState is what an acquire found.
type lockState int

const (
	lockTaken   lockState = iota + 1 // the lock is ours: run the slice
	lockRunning                      // a slice runs elsewhere
	lockResting                      // the job rests: its cooldown, or its slot's run is taken
	lockPaused                       // an operator paused the job
)

// grant is an acquire's answer: everything a process learns of the job on
// the one round trip it makes. The reply names each value; a mode's own
// are zero under the others.
type grant struct {
	state    lockState
	wait     time.Duration // until the state ends; negative: never (a lock of an earlier version, without expiry)
	redisNow int64         // Redis's clock when it answered, unix ms
	seat     string        // the seat taken beside the running slice; "" for the lock itself
	carry    bool          // this process carries the job: it visits the next slot (or tick) too
	watch    bool          // this process watches the carrier: it visits the watchEvery-th slot (or tick) on too

	left   time.Duration // automatic pace: until the current slot ends
	fleet  float64       // automatic pace, a schedule: the processes that visit, as counted; 0 while unknown
	streak int           // automatic pace: slices in a row that reported a backlog
	folds  int           // automatic pace: the slots the estimate has seen
	tick   int64         // a schedule: the latest tick taken, or skipped while paused, unix ms; 0 if none
}

// visitKind is why a process visits a job's lock.
type visitKind int8

const (
	visitPlanned visitKind = iota // its own plan: automatic pace's random gap, a schedule's drawn tick, a fixed rate's draw
	visitCarrier                  // the carrier's, to the slot or tick after the last, or its watcher's: weighs nothing in the count
	visitBacklog                  // continues this process's backlog (automatic pace): weighs nothing
	visitWoken                    // an enqueue here asked for it (wake.go): weighs nothing, and may take a resting job
)

// visit is what a visit to the job's lock tells the acquire script: what
// every mode says, then its mode's own arguments (args, the mode's name
// first), which the mode builds.
type visit struct {
	kind           visitKind
	born           string        // when its process started (Recruiter.born), to keep or claim the carrier's place; "" for none
	carrierSilence time.Duration // after which the carrier is taken for gone
	watcherSilence time.Duration // after which the carrier's watcher is taken for gone
	tick           time.Time     // a schedule: the tick it names
	args           []any
}

// acquireKeep is how many slots a job's pace state outlives its last
// visit, so that a lull does not make the fleet learn its pace anew.
const acquireKeep = 8

// heldLock is a job's lock as a slice holds it: the lock, the client it
// lives in, and the slice's token, which every step compares before it
// acts. The zero heldLock holds nothing.
type heldLock struct {
	lock  *jobLock
	rdb   redis.Scripter
	token string
	seat  string // the seat's field beside the lock; "" for the lock itself
}

// acquire takes the lock for a new slice, or says why not. The heldLock
// holds the lock only when g.state is lockTaken.
func (l *jobLock) acquire(ctx context.Context, rdb redis.Scripter, v visit) (h heldLock, g grant, err error) {
	token := rand.Text()
	args := append([]any{token, l.ttl.Milliseconds(), l.slices, v.kind == visitWoken, v.born, v.carrierSilence.Milliseconds(), v.watcherSilence.Milliseconds()}, v.args...)
	reply, err := acquireScript.Run(ctx, rdb, []string{l.key}, args...).Slice()
	if err != nil {
		return heldLock{}, grant{}, err
	}
	if g, err = parseGrant(reply); err != nil {
		return heldLock{}, grant{}, fmt.Errorf("unexpected reply %v: %w", reply, err)
	}
	if g.state != lockTaken {
		return heldLock{}, g, nil
	}
	return heldLock{lock: l, rdb: rdb, token: token, seat: g.seat}, g, nil
}

// parseGrant decodes the acquire's name, value pairs; a name it does not
// know is passed over.
func parseGrant(reply []any) (g grant, err error) {
	if len(reply)%2 != 0 {
		return grant{}, errors.New("an odd count of values")
	}
	var seen int
	for i := 0; i < len(reply); i += 2 {
		name, _ := reply[i].(string)
		text, isText := reply[i+1].(string)
		n, isInt := reply[i+1].(int64)
		switch name {
		case "seat", "fleet":
			if !isText {
				return grant{}, fmt.Errorf("%s is not text", name)
			}
		case "state", "wait", "now", "carry", "watch", "left", "streak", "folds", "tick":
			if !isInt {
				return grant{}, fmt.Errorf("%s is not an integer", name)
			}
		default:
			continue
		}
		switch name {
		case "seat":
			if len(text) > 4 {
				return grant{}, errors.New("malformed seat")
			}
			g.seat = text
		case "fleet":
			if text == "" {
				continue
			}
			v, err := strconv.ParseFloat(text, 64)
			if err != nil || !(v >= 0) {
				return grant{}, fmt.Errorf("estimate %q", text)
			}
			g.fleet = v
		case "state":
			if n < int64(lockTaken) || n > int64(lockPaused) {
				return grant{}, fmt.Errorf("state %d", n)
			}
			g.state, seen = lockState(n), seen+1
		case "wait":
			g.wait = bounded(n)
		case "now":
			g.redisNow = n
		case "carry":
			g.carry = n == 1
		case "watch":
			g.watch = n == 1
		case "left":
			g.left = bounded(n)
		case "streak":
			g.streak = int(min(max(n, 0), 64))
		case "folds":
			g.folds = int(min(max(n, 0), 99))
		case "tick":
			g.tick = n
		}
	}
	if seen != 1 {
		return grant{}, errors.New("no state")
	}
	return g, nil
}

// bounded turns milliseconds from Redis into a duration no longer than
// joblock.PauseMax (the longest wait of ours), so that a TTL of centuries set by
// hand cannot overflow the cool-off's unix nanoseconds; negative stays -1.
func bounded(ms int64) time.Duration {
	if ms < 0 {
		return -1
	}
	return time.Duration(min(ms, joblock.PauseMax.Milliseconds())) * time.Millisecond
}

// refresh gives the held lock ttl more to live.
func (h heldLock) refresh(ctx context.Context, ttl time.Duration) error {
	if h.seat != "" {
		return held(seatScript.Run(ctx, h.rdb, []string{h.lock.key}, h.seat, h.token, max(ttl.Milliseconds(), 1)).Int64())
	}
	return held(refreshScript.Run(ctx, h.rdb, []string{h.lock.key}, h.token, ttl.Milliseconds()).Int64())
}

// Marks of a release, for automatic pace.
const (
	releasePlain = ""     // nothing to say
	releaseMore  = "more" // the slice left a backlog: its slot opens again, the streak grows
	releaseHold  = "hold" // the slice of a streak caught up but found items: its slot opens again
	releaseLess  = "less" // the slice of a streak found nothing: the streak shrinks, and ends at zero
	releaseDone  = "done" // a backlog streak ended
)

// release ends the held lock's slice.
// A seat's release frees the seat and says nothing.
func (h heldLock) release(ctx context.Context, mark string) error {
	if h.seat != "" {
		return held(seatScript.Run(ctx, h.rdb, []string{h.lock.key}, h.seat, h.token, 0).Int64())
	}
	return held(releaseScript.Run(ctx, h.rdb, []string{h.lock.key}, h.token, mark).Int64())
}

// rest ends the held lock's slice and lets the job rest for d, fleet-wide.
// A seat only frees its seat: the lock's slice sets the rest.
func (h heldLock) rest(ctx context.Context, d time.Duration) error {
	if h.seat != "" {
		return h.release(ctx, releasePlain)
	}
	return held(restScript.Run(ctx, h.rdb, []string{h.lock.key}, h.token, d.Milliseconds()).Int64())
}

func held(n int64, err error) error {
	if err == nil && n == 0 {
		return errLockNotHeld
	}
	return err
}
