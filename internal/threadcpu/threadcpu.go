// Package threadcpu reads how much CPU time the calling OS thread has
// used. A goroutine may move between threads while it blocks, so a mark
// keeps its thread's id, and a reading on another thread is refused
// rather than compared.
package threadcpu

import "time"

// Mark is a thread's CPU time at one moment.
type Mark struct {
	tid int
	cpu time.Duration
}

// Now marks the calling thread's CPU time; false where the platform
// offers no such clock (only Linux does here).
func Now() (Mark, bool) {
	tid, cpu, ok := read()
	return Mark{tid: tid, cpu: cpu}, ok
}

// Since is the CPU time the calling thread has used since m; false if
// the caller now runs on another thread than m's, or has no clock.
func (m Mark) Since() (time.Duration, bool) {
	tid, cpu, ok := read()
	if !ok || tid != m.tid {
		return 0, false
	}
	return max(cpu-m.cpu, 0), true
}
