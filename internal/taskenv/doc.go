// Package taskenv is a task's envelope: how package tasks writes a task
// into a queue item's payload and reads it back ([Envelope], [Decode]),
// and how operators' tools (package inspect) and the test helpers
// (tasks/taskstest) read it, with no copy of the format.
package taskenv
