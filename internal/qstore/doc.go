// Package qstore is the Redis storage of worksteal's queues: their keys,
// their Lua scripts and the Go that runs them, as asynq keeps its storage
// in internal/rdb behind its Client and Inspector.
//
// # Its faces
//
// Package queue is the public face of a plain queue: each of its methods
// is one of a [Store]'s, with its types converted (they have the same
// fields), and its docs say what each promises. Package tasks is the face
// of chains and fan-outs, which use what a plain queue's user never
// calls: the follow-up that an ack enqueues in the same script call
// ([FollowUp], [Settlement].FollowUp), a chain's record ([ChainStep] in
// [EnqueueOptions], [Store.Chain]) and joins ([JoinSpec],
// [Store.EnqueueJoin], [Store.Join], [Store.JoinResults]). jobs' Drain
// and the Mux's job of tasks, both internal/drain's loop, work a queue
// through its Store, which [Of] returns.
//
// The scripts of a plain queue carry the chains' and joins' steps too
// (settle.lua acks and enqueues a follow-up, counts a join down; state.lua
// sees a join failed by a dead child; enqueuewith.lua writes a chain's
// record), so that each move stays one atomic script call: one store,
// then, whose every key shares the queue's hash tag. cancel.lua ends
// an item, a chain's current step or a join in one call too, and the
// scripts that meet what it leaves (a tombstone in a list, a canceled
// record) read them: claim.lua, settle.lua, state.lua, chain.lua,
// join.lua.
//
// # Where things are documented
//
// The Redis layout, the guarantees and the costs are package queue's
// doc, for its users; each script's header lists its KEYS and ARGV.
//
// # Scripts and their parts
//
// One .lua file per script, beside the Go that runs it. What several
// scripts share is a part, a file of local functions (lanes.lua,
// types.lua, lease.lua, ...). A script, or a part, names the parts it
// calls on its first line, "-- needs: lanes, types"; one loader
// (scripts.go) puts them before it, each once, once per process, and a
// test fails when a file calls a part's function it does not name.
//
// # How a claim works
//
// claim.lua maintains the queue first, so that whoever claims keeps it
// moving, and what it brings back can be claimed by the same call: up to
// n due items promoted, n expired leases handed back or dead-lettered,
// n expired results dropped (maintain.lua, expired.lua). Bounded by n,
// its work grows with what its caller asked for. With nothing due or
// expired it costs one ZRANGEBYSCORE on leases, one on delayed if it
// exists, and one LINDEX. Whether the queue has limits per type, items
// set aside or priorities rides on EXISTS calls it makes anyway (EXISTS
// counts a key named twice twice); with any of them, claimtyped.lua
// claims, looking at up to 4n entries; else up to 2n, refilling once the
// places of duplicates and malformed entries (lease.lua says which). Ids
// are peeked at and trimmed from pending last, after every other write:
// Redis does not roll back a script that fails half-way. One bulk
// command per structure, and no number turned into a string per item
// (Lua's tostring costs more than most Redis commands here).
package qstore
