// Package taskenv lets operators' tools (package inspect) and the test
// helpers (tasks/taskstest) read a task's envelope, which package tasks
// owns and does not export: it fills in [Decode] in its init, as the
// owners of internal/hooks' functions do.
package taskenv
