// Package exphash is a Redis hash whose fields expire one by one, on any
// Redis: a [Hash] keeps its values in a hash and their expiry times in a
// sorted set beside it, both written by one script, and [Hash.Evict]
// removes the expired fields in bounded batches.
//
//	sessions, err := exphash.New(rdb, "sessions")
//	err = sessions.Set(ctx, "s3cr3t", []byte(`{"user":42}`), 30*time.Minute)
//	v, err := sessions.Get(ctx, "s3cr3t") // ErrNotFound once expired
//	evict, err := jobs.EvictExpired(sessions, jobs.EvictConfig{})
//	err = rec.Register(evict, recruiter.JobConfig{Every: 10 * time.Second})
//
// # Keys
//
// A hash called KEY is two Redis keys that share one hash tag, so that its
// scripts run on one Redis Cluster slot: "{KEY}:values" and "{KEY}:expiry",
// or "KEY:values" and "KEY:expiry" when KEY has a tag of its own (see
// [New]). [Hash.Keys] returns them, for reading or filling in bulk; the
// expiries are Unix milliseconds by Redis's clock.
//
// # Expiry and eviction
//
// Reads never see an expired field: [Hash.Get] compares its expiry with
// Redis's TIME. Expired fields stay in Redis until [Hash.Evict] removes
// them, up to a given count per call, reading and removing them in the
// same script, so that a field set again with a later expiry between two
// calls is kept. Nothing evicts by itself: run Evict from a job, as
// [github.com/worksteal/worksteal/jobs.EvictExpired] does in slices
// borrowed from web servers, or from a loop of your own. There is no
// per-eviction callback: the scripts return counts, not names.
//
// # Redis 7.4's HEXPIRE
//
// Redis 7.4 and later expire hash fields by themselves (HEXPIRE, HPEXPIRE;
// Redis 8.0 adds HSETEX to write a field with its TTL in one command;
// Valkey has them since 9.0): there, for a plain hash, prefer them. They
// cost no evictions and no second key, and Redis drops expired fields on
// access and in its own background cycle. What this package still offers:
//
//   - it works on Redis before 7.4, and on managed or compatible servers
//     without hash-field expiry;
//   - evictions are counted: run by the jobs package, each slice's count
//     reaches the recruiter's stats, spans and metrics, and the work is
//     bounded per slice and shown on the status page rather than hidden in
//     Redis's cycle.
//
// It costs more memory (a sorted-set entry per field) and a script per
// write.
package exphash
