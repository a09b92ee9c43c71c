// Command example is worksteal's first contact: a small shop served on
// net/http, echo and gRPC at once, whose cheap answers (catalog cache
// hits, confirmations already sent) do its background work. There is no
// cron job and no daemon: every chore below runs in slices lent by
// requests.
//
//	go run ./example                                  # embedded Redis (miniredis), built-in traffic
//	REDIS_URL=redis://localhost:6379/0 go run ./example
//	REDIS_URL=rediss://user:pass@redis:6380/0 go run ./example -redis-ca ca.pem
//	REDIS_ADDRS=node1:7000,node2:7000,node3:7000 go run ./example   # Redis Cluster
//	REDIS_ADDRS=node1:7000 REDIS_TLS=1 REDIS_USERNAME=app REDIS_PASSWORD=secret go run ./example
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 go run ./example   # spans over OTLP
//	go run ./example -traffic=false                   # drive it yourself (or TRAFFIC=false)
//	make run ARGS='-traffic=false'                    # the same, built first
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
//   - POST /orders, PlaceOrder: enqueues the order's confirmation message
//     on a reliable queue and answers 202 with its id at once; it also
//     renews the customer's session in an expiring hash. The body is one
//     JSON object of at most 4096 bytes: else 400, or 413 if larger.
//   - GET /orders/{id}, OrderStatus: the confirmation once sent (a fast
//     exit), else waits up to 2s for it (queue.Wait): 200 "sent", 202
//     "pending" or 200 "failed".
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
//   - drain.confirmations sends the confirmations (jobs.Drain); every
//     tenth order's first send fails, to show retries.
//   - promote.confirmations moves those retries back when due (jobs.PromoteDue).
//   - tidy.confirmations hands back the leases of crashed workers (jobs.TidyStale).
//   - evict.sessions removes expired sessions (jobs.EvictExpired).
//   - refresh-popular reloads the most read items before they expire.
//
// At start the example seeds a worker's "crash" (orders claimed with a
// 1ms lease and abandoned) and expired sessions, so that every chore has
// work within seconds. A summary every few seconds shows the requests by
// stack, the fast exits, the queue and the sessions in Redis, and each
// job's slices as ran/skipped/failed:items.
//
// # Telemetry
//
// The recruiter gets an SDK MeterProvider read by the Prometheus exporter
// and an SDK TracerProvider; with the standard OTEL_EXPORTER_OTLP_*
// variables set, spans go out over OTLP (http/protobuf by default, grpc
// with OTEL_EXPORTER_OTLP_PROTOCOL=grpc). otelhttp, otelecho and otelgrpc
// make the request spans, so that each worksteal.recruit span links to the
// request that lent its time.
//
// SIGINT or SIGTERM stops the traffic, drains the servers, waits for the
// slices in flight, flushes the exporters and exits 0. A second SIGINT
// (Ctrl-C) during that shutdown kills the process at once.
package main
