// Package joblock reads and pauses a recruiter job's lock from outside a
// recruiter: package recruiter pauses through it, and operators' tools
// (package inspect) read and pause through it, so both agree on the key
// and its fields. The lock's other scripts, which run slices, live in
// package recruiter (lock.go), whose lock_acquire.lua says each field.
package joblock
