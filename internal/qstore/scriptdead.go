package qstore

import (
	"context"
	"fmt"
)

// ScriptDead is a dead letter that a script made on its own, where no
// handler failed: a lease that expired at its last attempt (found by a
// claim's maintenance or by Tidy), or a pending id without a stored value
// (found by a claim). Package tasks logs it and runs its dead-letter hook,
// as for a handler's failure at its last attempt.
type ScriptDead struct {
	ID      string
	Payload []byte // nil for an id without a stored value
	// Attempt is the count of claims the item had; MaxAttempts its limit,
	// 0 where the script did not know it (an id without a value).
	Attempt, MaxAttempts int
	Cause                string // as the causes hash keeps it
}

// LeaseExpired reports whether d is a lease that expired at its last
// attempt, rather than malformed data.
func (d ScriptDead) LeaseExpired() bool { return d.Payload != nil }

// OnScriptDead sets the function that gets the dead letters that this
// store's scripts make (see [ScriptDead]), in the context of the call
// that made them, once the call returned. nil sets none; a later call
// replaces the earlier one, so that each dead letter is reported once.
func (q *Store) OnScriptDead(f func(ctx context.Context, d ScriptDead)) {
	if f == nil {
		q.onScriptDead.Store(nil)
		return
	}
	q.onScriptDead.Store(&f)
}

// deadMark heads a reply's list of the dead letters its script made
// (reportDead in maintain.lua).
const deadMark = "dead"

// splitDead takes the dead letters' list off the end of a script's reply,
// if it has one, and hands them to the store's OnScriptDead function. The
// list is told from the reply's other lists by its head, a string.
func (q *Store) splitDead(ctx context.Context, reply []any) []any {
	if len(reply) == 0 {
		return reply
	}
	list, ok := reply[len(reply)-1].([]any)
	if !ok || len(list) == 0 {
		return reply
	}
	if head, _ := list[0].(string); head != deadMark {
		return reply
	}
	q.reportDead(ctx, list[1:])
	return reply[:len(reply)-1]
}

// reportDead hands each (id, value, attempt, limit, cause) of entries to
// the store's OnScriptDead function.
func (q *Store) reportDead(ctx context.Context, entries []any) {
	f := q.onScriptDead.Load()
	if f == nil {
		return
	}
	for i := 0; i+4 < len(entries); i += 5 {
		d := ScriptDead{}
		d.ID, _ = entries[i].(string)
		if v, _ := entries[i+1].(string); v != "" {
			d.Payload = []byte(v)
		}
		attempt, _ := entries[i+2].(int64)
		limit, _ := entries[i+3].(int64)
		d.Attempt, d.MaxAttempts = int(attempt), int(limit)
		d.Cause, _ = entries[i+4].(string)
		(*f)(ctx, d)
	}
}

// Tidy is Claim's tidying step on its own, for up to max expired leases,
// the longest expired first: jobs.TidyStale's batch.
func (q *Store) Tidy(ctx context.Context, max int) (int, error) {
	if err := checkCount("tidy max", max); err != nil {
		return 0, err
	}
	reply, err := tidyScript.Run(ctx, q.rdb, q.k.tidyKeys, max, q.cfg.MaxAttempts).Result()
	if err != nil {
		return 0, q.wrap("tidy", err)
	}
	switch r := reply.(type) {
	case int64: // the previous release's script, which a test runs beside this one
		return int(r), nil
	case []any:
		if n, ok := r[0].(int64); ok && len(r) == 2 {
			q.splitDead(ctx, r)
			return int(n), nil
		}
	}
	return 0, q.wrap("tidy", fmt.Errorf("%w: %v", errUnexpectedScript, reply))
}
