// Package hooks lets this repository's tests set what no user sets: the
// recruiter's roll and clock, and the queue's retry jitter. The packages
// that own them fill in the functions in their init, as grpc-go's internal
// package does, so that their public configs carry no test hook.
package hooks

import "time"

// RecruiterConfig returns cfg, a recruiter.Config, with the given roll
// (uniform in [0, 1)) and clock; nil keeps a default.
var RecruiterConfig func(cfg any, roll func() float64, now func() time.Time) any

// QueueConfig returns cfg, a queue.Config, with the given retry jitter
// (uniform in [0, 1)); nil keeps the default.
var QueueConfig func(cfg any, jitter func() float64) any

// RecruiterPressure returns cfg, a recruiter.Config, with the pressure
// gate reading read instead of the Go scheduler: tests make a process
// busy or idle at will.
var RecruiterPressure func(cfg any, read func() (p99 time.Duration, ok bool)) any
