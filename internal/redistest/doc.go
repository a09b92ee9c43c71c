// Package redistest starts throw-away redis-server processes for tests.
//
// Each Server is a real redis-server bound to a free 127.0.0.1 port, with
// its own t.TempDir(), no persistence (--save "" --appendonly no), and is
// killed in t.Cleanup, so tests can run in parallel without sharing state:
//
//	srv := redistest.Start(t)
//	rdb := srv.Client(t)
//	rdb.Set(ctx, "k", "v", 0)
//
// Because the process is ours, tests can inject faults: Kill (SIGKILL),
// Restart (same port, empty data set), Pause (SIGSTOP) and Resume (SIGCONT).
// CommandCalls reads INFO commandstats, e.g. to assert a script was loaded
// once and then called via EVALSHA.
//
// StartCluster starts three masters with all 16384 slots assigned and
// waits until the cluster is usable from a redis.ClusterClient.
// StartClusterWithReplicas adds a replica to each master, and
// StartSentinel starts a primary, two replicas and three Sentinels (the
// same binary, run with --sentinel); on both, KillMaster SIGKILLs a
// master and Failover.WaitPromoted waits for its replica's promotion and
// says when it was first seen.
//
// The redis-server binary is $REDIS_SERVER when set (a path, or a name on
// PATH), else redis-server on PATH. Start, StartCluster and StartTLS all
// run it, so `REDIS_SERVER=/opt/valkey/bin/valkey-server go test ./...`
// runs the suite against another server; a REDIS_SERVER that is not an
// executable redis-server fails every test that starts one, naming the
// variable. The first server started logs its version (seen with -v).
//
// Without a binary the test fails (never skips) with install instructions,
// unless REDIS_URL is set: then Start returns a Server backed by that
// external instance and the fault injection methods and StartCluster fail
// the test. Tests sharing a REDIS_URL instance must use unique key
// prefixes, since they no longer get a private data set (and must not
// FLUSHALL).
//
// Signals make this package Unix-only.
package redistest
