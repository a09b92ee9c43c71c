package drain

import (
	"runtime"
	"time"

	"github.com/worksteal/worksteal/internal/threadcpu"
)

// Handlers that burn CPU must not take the process's CPUs from its
// requests. A slice reads how much CPU sampled handlers use (on Linux),
// runs fewer of them at once when they burn, and lets its goroutines
// yield now and then.

// handlersLearnt is how many handlers a slice starts with: as many as the
// latest slice ended with, Concurrency before the first.
func (j *drainJob) handlersLearnt() int {
	if n := int(j.handlers.Load()); n > 0 {
		return n
	}
	return j.cfg.Concurrency
}

// cpuLimit is how many handlers the next batch runs at once, from the
// CPU that sampled items of a batch used. Their CPU over their time is
// how much of a core a handler keeps busy (a handler's time begins once
// its goroutine runs, so handlers queued for a CPU do not dilute it).
// Other processes that keep the CPUs busy do dilute it, so a handler on
// a CPU half its time or more counts as burning all along. The handlers
// may burn half the process's CPUs (GOMAXPROCS/2, at least one)
// together, which leaves the rest to its requests however many handlers
// Concurrency allows: handlers that burn run that many at once, handlers
// that wait up to Concurrency. c.took is above 0: its caller read an item.
func (j *drainJob) cpuLimit(c cpuSample) int {
	limit := float64(max(1, runtime.GOMAXPROCS(0)/2))
	perHandler := min(2*float64(c.cpu)/float64(c.took), 1)
	return int(min(max(limit/max(perHandler, 1e-3), 1), float64(j.cfg.Concurrency)))
}

// cpuSampleEvery: one item in this many has its handler's CPU read (the
// first of a batch always), which costs a thread of its own meanwhile.
const cpuSampleEvery = 4

// cpuSample is the CPU and the time of the sampled items of a batch.
type cpuSample struct{ cpu, took time.Duration }

func (c *cpuSample) add(cpu, took time.Duration) { c.cpu += cpu; c.took += took }

// cpuProbe reads one handler's CPU time. Its goroutine keeps its thread
// meanwhile, so that the thread's clock counts that handler alone: a
// handler that waits would otherwise be charged with what other
// goroutines ran on its thread in the meantime. The zero probe reads
// nothing.
type cpuProbe struct {
	mark threadcpu.Mark
	on   bool
}

// startCPUProbe starts reading if on and the thread has a clock.
func startCPUProbe(on bool) cpuProbe {
	if !on {
		return cpuProbe{}
	}
	runtime.LockOSThread()
	mark, ok := threadcpu.Now()
	if !ok {
		runtime.UnlockOSThread()
	}
	return cpuProbe{mark: mark, on: ok}
}

// stop ends the reading and frees the thread; false if nothing was read.
func (p cpuProbe) stop() (time.Duration, bool) {
	if !p.on {
		return 0, false
	}
	defer runtime.UnlockOSThread()
	return p.mark.Since()
}

// yieldEvery is how long a handlers' goroutine runs items before it
// lets the others waiting for its CPU run (runtime.Gosched). The
// goroutines readied while a handler burns wait on its P, unless another
// one is idle and takes them, until the runtime preempts the handler
// after 10ms: a request's goroutine among them would wait that long.
const yieldEvery = time.Millisecond

// yieldAfter counts an item that took took in ran, the time since the
// goroutine last yielded, and yields once that reaches yieldEvery.
func yieldAfter(ran, took time.Duration) time.Duration {
	if ran += took; ran < yieldEvery {
		return ran
	}
	runtime.Gosched()
	return 0
}
