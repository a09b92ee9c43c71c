// Package schedule reads a recruiter job's cron Schedule: package
// recruiter runs its ticks, and operators' tools (package inspect) show
// the next one, both through [Parse].
package schedule
