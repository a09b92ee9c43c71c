// Package failover is the fault suite's replication part: a master is
// SIGKILLed and a replica promoted in its place, on a Redis Cluster with
// a replica per master and on a primary watched by three Sentinels, while
// an app uses the queue and steals work. It holds tests only.
//
// # What is proven
//
// Two web servers, each with its own go-redis client left at its defaults
// (a ClusterClient, or a failover client) and a recruiter left at
// worksteal's, enqueue continuously, answer cheap requests (304) through
// the net/http middleware, and drain and tidy one queue with the work they
// steal. Once 1,500 enqueues are acknowledged and 300 items drained, the
// master that owns the queue's slot, and the drain's lock, is killed. The
// tests count, and log with -v:
//
//   - acknowledged enqueues lost: every one must end with its result,
//     none dead-lettered, but those acknowledged within 250 ms of the
//     kill, which asynchronous replication may lose, and, should the
//     Sentinels fail over twice, those acknowledged by the master first
//     promoted (they are logged);
//   - handler calls that were redeliveries, and how many of them were of
//     an item whose slice had already settled it (an ack lost with the
//     master, had it not reached the replica);
//   - the time from the promotion to the first acknowledged enqueue and
//     to the first stolen slice that did work (bounded loosely, 15 s and
//     20 s; a ClusterClient without the slot-map reload of
//     internal/heal needed about 60 s), and from the kill to that slice's
//     start: under Sentinel within 3.5 s of the promotion (the issue's
//     target is 5 s from the kill), unless the
//     pressure gate held drain slices back meanwhile (a loaded machine:
//     then it is logged, not asserted);
//   - requests failed: none may be;
//   - drain slices that began while another ran, fleet-wide: none may, as
//     a 100 ms slice ends long before a failover of seconds can hand its
//     lock to another server (see docs/failover.md).
//
// # Running
//
//	go test -race -count=1 -v ./failover/
//
// Each test starts its own servers (redistest.StartClusterWithReplicas,
// redistest.StartSentinel) on free loopback ports.
package failover
