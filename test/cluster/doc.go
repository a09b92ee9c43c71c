// Package cluster is the fault suite's Redis Cluster part: worksteal's
// queue and jobs keep their promises on a 3-master cluster (no replicas)
// while the cluster itself changes under them. It holds tests only.
//
// # What is proven
//
//   - TestMasterRestartedDuringDrain: a queue of 3,000 items drains
//     (jobs.Drain and jobs.TidyStale, enlisted every millisecond) while the
//     master that owns the queue's hash-tag slot is SIGKILLed and
//     restarted. The slot is unavailable meanwhile: a queue call fails,
//     and the drain reports failures (or its breaker opens). The nodes run
//     with an fsync-always AOF (redistest.StartClusterWithArgs), so the
//     restarted master keeps every write it acknowledged; the drain
//     recovers, and every enqueued id ends with exactly its one result,
//     the queue empty, no dead letters.
//   - TestSlotMigrationDuringDrain: the queue's slot is resharded to
//     another master while the drain runs, as redis-cli does it: CLUSTER
//     SETSLOT IMPORTING and MIGRATING, MIGRATE of one key at a time with a
//     drain slice between every two steps, SETSLOT NODE on every node.
//     Mid-migration the queue's Lua scripts meet keys split over two nodes
//     and get TRYAGAIN (or ASK); afterwards the client's stale slot map gets
//     MOVED. A hook on every node client counts them, and the test fails
//     if none was seen. The jobs report errors at worst; the drain
//     completes once the slot has moved, and nothing is lost.
//     TestSlotMigrationDuringDrainWithPriorities does the same on a queue
//     with priorities and a type limit, whose claims also touch the keys
//     that the scripts name after the queue's hash tag themselves.
//
// Both log their figures (items handled at the fault, failures, redirects,
// redeliveries); run with -v to see them.
//
// # Running
//
//	go test -race -count=1 ./test/cluster/
//
// Needs redis-server on PATH (`sudo apt-get install -y redis-server`);
// each test starts its own cluster on free loopback ports.
package cluster
