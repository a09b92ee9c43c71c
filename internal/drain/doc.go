// Package drain is the loop behind jobs.Drain and tasks' Mux.Job: a job
// whose slices claim batches of a queue's items, run a [Handler] on them
// side by side and settle the outcomes. A Handler may return a follow-up
// (a chain's next step) that the item's ack enqueues in the same script
// call: what a Mux needs and a plain queue's user never does, so package
// jobs does not export it. Both packages import this one and call [New]
// with a [Config], the fields of jobs.DrainConfig.
//
// It holds too what jobs' other batched jobs share with the drain: the
// errors that package jobs exports, [Batching]'s defaults and checks, the
// derived job names, and the bounds of a slice's Redis calls.
//
// What a drain promises is jobs.Drain's doc; how it keeps it (the budget,
// the leases, the handlers' CPU, the cancel polls) is package jobs' doc,
// which tasks' docs point to. Here, drain.go runs the slice, cancelwatch.go
// polls for canceled items and cpu.go reads the handlers' CPU.
package drain
