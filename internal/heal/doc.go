// Package heal makes a redis.ClusterClient find a promoted replica in
// seconds rather than a minute.
//
// go-redis v9 reloads a ClusterClient's slot map on MOVED and ASK, and
// otherwise every ClusterStateReloadInterval (60 s by default): not when
// the master of a slot stops answering (go-redis issue #3979). After a
// failover the client keeps dialling the dead master, and every call to
// its slots fails until the next periodic reload, although a replica was
// promoted seconds after the crash.
//
// worksteal's own calls (the recruiter's lock, every queue call, the
// eviction jobs) hand their errors to [Notice], directly or through
// [Scripter]. A connection error on a *redis.ClusterClient makes the
// client reload its slot map, at most twice a second per client: the
// first failed call after the promotion starts the reload, and the calls
// after it reach the new master. Anything else (another client, a server's
// error reply, a cancelled call) is left alone.
//
// # Cost
//
// Notice on a nil error is one comparison. A reload is one CLUSTER SLOTS
// call, made by go-redis on its own goroutine (ClusterClient.ReloadState):
// Notice never waits for it, so neither a request nor a slice does.
package heal
