// Command example is worksteal's first contact: a small shop served on
// net/http, echo and gRPC at once, whose cheap answers (catalog cache
// hits, orders already confirmed) do its background work. There is no
// worker and no cron daemon: every chore below runs in slices lent by
// requests, or once per tick of its schedule, in the service itself.
// Dedicated workers on the same queue are one flag away (-role, below).
//
//	go run ./example                                  # embedded Redis (miniredis), built-in traffic
//	REDIS_URL=redis://localhost:6379/0 go run ./example
//	REDIS_URL=rediss://user:pass@redis:6380/0 go run ./example -redis-ca ca.pem
//	REDIS_ADDRS=node1:7000,node2:7000,node3:7000 go run ./example   # Redis Cluster
//	REDIS_ADDRS=node1:7000 REDIS_TLS=1 REDIS_USERNAME=app REDIS_PASSWORD=secret go run ./example
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 go run ./example   # spans over OTLP
//	go run ./example -traffic=false                   # drive it yourself (or TRAFFIC=false)
//	make run ARGS='-traffic=false'                    # the same, built first
//	make run ARGS=-role=both                          # the servers, and a dedicated worker beside them
//	REDIS_URL=redis://localhost:6379/0 make run ARGS=-role=worker   # a worker for the web processes on that Redis
//
// These flags fall back to an environment variable: -http HTTP_ADDR
// (default 127.0.0.1:8080), -echo ECHO_ADDR (127.0.0.1:8081), -grpc
// GRPC_ADDR (127.0.0.1:9090), -admin ADMIN_ADDR (127.0.0.1:8079), -redis
// REDIS_URL, -redis-addrs REDIS_ADDRS, -redis-tls REDIS_TLS, -redis-ca
// REDIS_CA, -trace-url TRACE_URL, -traffic TRAFFIC, -debug DEBUG;
// -duration and -summary are flags only. -help lists them all.
//
// A Redis Cluster (REDIS_ADDRS) authenticates with REDIS_USERNAME and
// REDIS_PASSWORD when they are set, and speaks TLS with -redis-tls
// (REDIS_TLS=1), verified against the system's roots, or against a private
// CA with -redis-ca (which implies -redis-tls). A single server takes all
// of these from its redis:// or rediss:// URL.
//
// # The shop
//
// Each stack serves the same three operations (HTTP and echo: routes;
// gRPC: the Catalog service of catalogpb, with server reflection):
//
//   - GET /items/{id}, GetItem: an item read through a Redis cache. A hit
//     is a fast exit (recruiter.MarkFastExit).
//   - POST /orders, PlaceOrder: enqueues the order as a chain of typed
//     tasks (package tasks) on a reliable queue, reserve → charge →
//     confirm (order.reserve, order.charge, order.confirm; each step's
//     result is the next one's arguments), and answers 202 with the
//     chain's id at once; it also renews the customer's session in an
//     expiring hash. The body is one JSON object of at most 4096 bytes:
//     else 400, or 413 if larger.
//   - GET /orders/{id}, OrderStatus: the chain's progress
//     (tasks.ChainStatus): step k of 3 and its task type, and the
//     confirmation once sent (a fast exit); else it waits up to 2s for
//     the chain to end (tasks.WaitChain): 200 "sent", 202 "pending" or
//     200 "failed" with the cause of the step that died.
//
// A separate admin port (-admin, ADMIN_ADDR, default 127.0.0.1:8079: keep
// it private) serves the dashboard at /debug/worksteal (JSON with
// ?format=json) and Prometheus metrics at /metrics; the shop's ports
// serve neither. Its requests lend no time to the chores.
//
// The net/http and echo servers time out a request's headers after 5s, a
// response after 10s (the status route waits up to 2s) and an idle
// keep-alive connection after 60s.
//
// # The chores
//
//   - tasks.orders runs the orders' steps (the job of a tasks.Mux, which
//     enqueues each next step with the ack of the one before); every
//     tenth order's first send (its confirm step) fails, to show retries.
//     Its claims also move those retries back when due and hand back the
//     leases of crashed workers: the queue needs no other job.
//   - evict.sessions removes expired sessions (jobs.EvictExpired).
//   - refresh-popular reloads the most read items before they expire.
//   - depth.orders reads the orders queue's depth every 5s, fleet-wide,
//     for the metrics (jobs.QueueDepth): worksteal.queue.depth by state
//     and worksteal.queue.oldest_pending.
//   - nightly-report enqueues a report.sales task once per tick of its
//     cron schedule (tasks.Task.Periodic), every 10s here where a shop's
//     would be nightly ("0 3 * * *"); tasks.orders runs it, and it stores
//     the sales counts in example:report:sales.
//   - trim-popular keeps the read counts of the 100 most read items, a
//     plain job on a schedule (recruiter.JobConfig.Schedule), every 15s.
//
// The scheduled jobs show on the dashboard with their next tick, and in
// /metrics as worksteal.job.next_tick.
//
// At start the example seeds a worker's "crash" (orders claimed with a
// 1ms lease and abandoned) and expired sessions, so that every chore has
// work within seconds. A summary every few seconds shows the requests by
// stack, the fast exits, the queue and the sessions in Redis, and each
// job's slices as ran/skipped/failed:items. The dashboard adds the
// attempts of each task type (done, retried, dead, running).
//
// # Roles: web, worker, both
//
// -role=web (the default) serves the shop, and its cheap answers run the
// chores. -role=worker serves nothing: tasks.Mux.Serve works the orders'
// queue off with 32 handlers at once, back to back, beside the web
// processes on the same Redis (REDIS_URL or REDIS_ADDRS: it refuses the
// embedded one, which no other process shares), and its recruiter
// carries the other chores on its pace timer, without traffic. A
// worker's first SIGINT or SIGTERM stops its claims, hands back the
// tasks it claimed and did not start, and lets the started ones finish
// for up to 10s (WorkerConfig.ShutdownTimeout, below Kubernetes' 30 s
// grace period); a second one ends their contexts at once
// (WorkerConfig.Abort), and their tasks go back to the queue, their
// attempts unused. -role=both runs the servers and a worker in one
// process, on the embedded Redis too, so that the summary shows the
// orders sent in stolen time and by the worker: sent=N (stolen=S
// worker=W).
//
// To move every chore off the web servers, run them with -steal=false
// (their cheap answers lend no time, and they register no job) and
// start -role=worker processes on their Redis:
//
//	REDIS_URL=redis://localhost:6379/0 make run ARGS=-steal=false   # one terminal
//	REDIS_URL=redis://localhost:6379/0 make run ARGS=-role=worker   # another
//
// # Telemetry
//
// The recruiter and the tasks Mux (worksteal.task.attempts by task type
// and outcome) get an SDK MeterProvider read by the Prometheus exporter
// and an SDK TracerProvider; with the standard OTEL_EXPORTER_OTLP_*
// variables set, spans go out over OTLP (http/protobuf by default, grpc
// with OTEL_EXPORTER_OTLP_PROTOCOL=grpc). otelhttp, otelecho and otelgrpc
// make the request spans, so that each worksteal.recruit span links to the
// request that lent its time. /metrics speaks OpenMetrics to a scraper
// that asks for it, with exemplars: the trace id of a recruit span on the
// bucket of worksteal.slice.duration its slice fell in. The Grafana
// dashboard and alert rules of deploy/ read these metrics.
//
// A worker serves no /metrics: its recruiter's and its Mux's metrics are
// recorded, not exported (a worker Deployment would serve them on a port
// of its own, for the scaling rule of docs/operations.md).
//
// SIGINT or SIGTERM stops the traffic, drains the servers, waits for the
// worker (-role=both) and the slices in flight, flushes the exporters and
// exits 0. A second SIGINT (Ctrl-C) during that shutdown ends the process
// at once, once a worker has handed back its started tasks.
package main
