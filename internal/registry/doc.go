// Package registry keeps, under a key prefix, the names of what a fleet
// runs: its queues, its jobs with their pace, and the task types each
// queue serves. Operators' tools (package inspect, the worksteal CLI)
// list them from three hashes, with no SCAN.
//
// # Keys
//
// All three share the hash tag {PREFIX:registry}, so one pipeline reads
// them on one node of a cluster:
//
//	{PREFIX:registry}:queues  hash name → a [Queue] as JSON
//	{PREFIX:registry}:jobs    hash name → a [Job] as JSON
//	{PREFIX:registry}:types   hash "QUEUE/TYPE" → a [Type] as JSON
//
// # When they are written
//
// Never on a caller's path: queue.New and a Mux's Job note what they make
// in this process's memory ([NoteQueue], [NoteTypes]), and a recruiter
// writes its jobs and the notes made with its Redis client from its pace
// timer, once a slice has reached Redis, in one pipeline, and again only
// when something new was registered. An error is dropped: the next wake
// of the timer tries again. An entry stays until it is overwritten or
// deleted by hand (HDEL): a name removed from the code is still listed,
// with the time it was last registered.
package registry
