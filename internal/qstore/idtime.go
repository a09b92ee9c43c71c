package qstore

import "time"

// IDTime is when the item id was made, by the clock of the process that
// made it (newID): for an enqueued item, when it was enqueued; for a
// chain's later step, when the step before it was acked; for a fan-out's
// child ("ID.n"), when the fan-out was enqueued. ok is false for an id
// not of that form (one written by hand). It reads the id alone: no
// Redis call, no allocation. readyat.lua's idTime reads it the same way.
func IDTime(id string) (t time.Time, ok bool) {
	if len(id) > 26 && id[26] == '.' {
		id = id[:26]
	}
	if len(id) != 26 {
		return time.Time{}, false
	}
	// The first 10 characters hold 50 bits: the 48 of the time, then 2
	// random ones.
	var v int64
	for i := range 10 {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z':
			v = v<<5 | int64(c-'a')
		case c >= '2' && c <= '7':
			v = v<<5 | int64(c-'2'+26)
		default:
			return time.Time{}, false
		}
	}
	return time.UnixMilli(v >> 2), true
}
