// Package taskstest helps an application's own tests of its tasks: it
// starts a throw-away redis-server, runs a [tasks.Mux]'s job
// synchronously until its queue has nothing left to do, and lists what
// the application's code enqueued, decoded: types, arguments and options
// (a delay's due time, an attempt limit, a unique key, a chain's step).
// Nothing sleeps: a test enqueues, runs, and asserts.
//
//	rdb := taskstest.Redis(t)                  // fails t, saying how to install redis-server, if it is missing
//	q, _ := queue.New(rdb, "mail", queue.Config{})
//	client, _ := tasks.NewClient(q)
//	signup(ctx, client, "ann@example.com")     // the code under test
//	got := taskstest.Tasks(t, q)               // what it enqueued
//	args := taskstest.Args[WelcomeArgs](t, got[0], nil)
//	job, _ := mux.Job(q, jobs.DrainConfig{})
//	taskstest.Run(t, q, job)                   // runs them, and what they enqueue, to the end
//
// A delayed task stays delayed: [Run] runs what is due; a test of a
// delayed task asserts its due time with [Tasks], or enqueues it without
// the delay. A failed attempt is retried after the queue's backoff, so a
// test that wants the retries run at once sets a tiny BackoffBase and
// BackoffMax, or MaxAttempts 1 to see failures dead-lettered at once.
//
// The server is a real redis-server found on PATH ($REDIS_SERVER when
// set), not an imitation: the scripts that run in production run here. It
// listens on a Unix socket in t.TempDir() and keeps nothing on disk.
// An embedded Redis for machines without one would pull a dependency
// into this module, which the library's users would download: it is not
// offered.
package taskstest
