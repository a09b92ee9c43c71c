// Package security is the fault suite's security part: isolation between
// applications, least-privilege ACLs, TLS, and the promise that clients
// cannot steer stolen work or the Redis traffic it makes. It holds tests
// only.
//
// # What is proven
//
//   - TestApplicationsWithDifferentPrefixes: two applications on one Redis
//     (prefixes "app-a" and "app-b", queues "orders" and "invoices", jobs
//     of the same names) each touch only keys under "PREFIX:" or
//     "{PREFIX:", by the keys of every command their clients send and by a
//     SCAN of the key space; app-a's "shared" lock, held elsewhere, skips
//     app-a's "shared" job and never app-b's.
//   - TestLeastPrivilegeACLUser: a recruiter with Drain, TidyStale,
//     PromoteDue and EvictExpired, its queue (Enqueue, Claim, Value,
//     Result, Wait) and an expiring hash all work as an ACL user with only
//     the permissions below, and ACL LOG stays empty; keys outside its
//     patterns, undeclared keys in scripts, and commands outside its list
//     are refused and logged.
//   - TestLeastPrivilegeACLUserOnCluster: the same application on a
//     3-master cluster, through a redis.ClusterClient of the ACL user,
//     which also follows an ASK redirect of a slot migration; ACL LOG
//     stays empty on every master.
//   - TestACLUserClientIdentity: the ACL user's client needs
//     DisableIdentity: with go-redis's defaults, each connection's CLIENT
//     SETINFO is refused and logged on Redis 7.2+ and Valkey; with it,
//     connecting logs nothing.
//   - TestACLCoversEveryScript: every command that a Lua script of queue,
//     jobs, exphash or recruiter calls is granted, and nothing else is, so
//     the list cannot fall behind the scripts; TestLeastPrivilegeACLUser
//     also checks every command the run sent (INFO commandstats, script
//     calls included) against the grant.
//   - TestTLS: over a TLS-only redis-server (--port 0; a CA and a
//     127.0.0.1 certificate, ECDSA P-256, made by the test), a client from
//     a rediss:// URL with the CA in TLSConfig.RootCAs runs the recruiter
//     and the queue with its jobs; a client without the CA fails with a
//     certificate verification error; plain text gets nowhere.
//   - TestClientsCannotTriggerStolenWork: 2,000 requests over HTTP that
//     are not fast exits, carrying X-Worksteal-* headers, query strings,
//     cookies, If-None-Match and huge headers, make no Redis command and
//     run no slice.
//   - TestFastExitFloodCannotRaiseRedisTraffic: the same requests as fast
//     exits, through stealhttp's default classifier, against a recruiter
//     with a job with Every 1s and one resting a 500ms budget: every slice
//     keeps its budget, only the two lock keys exist, the round trips stay
//     within the design's bound (per job, 2 per slice and 2 per skip, a
//     slice per interval, plus the scripts' first loads), and 80,000
//     requests make about the same traffic as 20,000 over the same time.
//
// # The ACL user
//
//	ACL SETUSER worksteal on >PASSWORD resetkeys ~worksteal:* ~{worksteal:* resetchannels -@all
//	  +evalsha +eval +blmove
//	  +time +get +exists +pexpire +pttl +incr
//	  +hget +hmget +hset +hdel +hexists +hgetall +hkeys
//	  +lpush +rpush +lindex +llen +lrange +ltrim
//	  +sadd +srem +smembers
//	  +zadd +zrem +zcard +zcount +zscore +zmscore +zrange +zrangebyscore +zremrangebyscore
//	  +info +command +cluster|slots +asking
//
// and its client sets DisableIdentity: true (go-redis would otherwise
// send CLIENT SETINFO, which the grant cannot name on Redis 7.0).
//
// Why each is needed is in the README (ACL permissions). Redis checks a
// script's commands and keys against the user that runs it, so the
// commands inside worksteal's Lua scripts are granted as well as EVALSHA
// and EVAL.
//
// # Running
//
//	go test -race -count=1 ./test/security/
//
// Needs redis-server on PATH (or REDIS_SERVER), built with TLS (Debian's
// is): `sudo apt-get install -y redis-server`.
package security
