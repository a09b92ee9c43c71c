// Package seams lets this module's tests set what no user sets: a
// recruiter's roll, clock and pressure reading, and a queue's retry
// jitter. recruiter.Config and queue.Config embed a struct of this package
// under an unexported name. Its fields and methods are unexported, so a
// user of those packages can neither see nor set them; tests set them
// through the functions here, which the compiler checks.
package seams

import "time"

// Recruiter is embedded in recruiter.Config.
type Recruiter struct {
	roll     func() float64
	now      func() time.Time
	pressure func() (p99 time.Duration, ok bool)
}

// Queue is embedded in queue.Config.
type Queue struct {
	jitter func() float64
}

func (s *Recruiter) recruiterSeams() *Recruiter { return s }
func (s *Queue) queueSeams() *Queue             { return s }

// RecruiterConfig is a *recruiter.Config, or the *Recruiter it embeds.
type RecruiterConfig interface{ recruiterSeams() *Recruiter }

// QueueConfig is a *queue.Config, or the *Queue it embeds.
type QueueConfig interface{ queueSeams() *Queue }

// SetRoll sets the roll of an enlistment, uniform in [0, 1), and the clock
// of cool-offs, the breaker, the pace timer and LastRun; nil keeps a
// default.
func SetRoll(c RecruiterConfig, roll func() float64, now func() time.Time) {
	s := c.recruiterSeams()
	s.roll, s.now = roll, now
}

// SetPressure makes the pressure gate read its p99 from read (false: too
// few events to judge) instead of the Go scheduler.
func SetPressure(c RecruiterConfig, read func() (p99 time.Duration, ok bool)) {
	c.recruiterSeams().pressure = read
}

// SetJitter sets the retry jitter, uniform in [0, 1) and safe for
// concurrent use; nil is math/rand/v2.Float64.
func SetJitter(c QueueConfig, jitter func() float64) { c.queueSeams().jitter = jitter }

// Roll, Now, Pressure and Jitter return what was set, or nil.
func Roll(c RecruiterConfig) func() float64  { return c.recruiterSeams().roll }
func Now(c RecruiterConfig) func() time.Time { return c.recruiterSeams().now }
func Pressure(c RecruiterConfig) func() (p99 time.Duration, ok bool) {
	return c.recruiterSeams().pressure
}
func Jitter(c QueueConfig) func() float64 { return c.queueSeams().jitter }
