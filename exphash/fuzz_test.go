package exphash_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/worksteal/worksteal/exphash"
	"github.com/worksteal/worksteal/internal/redistest"
)

// FuzzNew: for any key, New returns a hash whose two keys contain the key
// and share one cluster slot, or ErrInvalidArgument for an empty key or
// one with braces but no hash tag; never a panic, never a Redis call.
func FuzzNew(f *testing.F) {
	for _, key := range []string{"sessions", "a{}b", "app:{t7}:sessions", "}{", "\xff\x00{", "a}b{", "{x}", strings.Repeat("k:", 200) + "{}"} {
		f.Add(key)
	}
	rdb := offlineClient(f)
	f.Fuzz(func(t *testing.T, key string) {
		h, err := exphash.New(rdb, key)
		invalid := key == "" || strings.ContainsAny(key, "{}") && redistest.HashTag(key) == key
		if invalid {
			if h != nil || !errors.Is(err, exphash.ErrInvalidArgument) || !strings.Contains(err.Error(), "key") {
				t.Fatalf("New(%q) = %v, %v; want ErrInvalidArgument naming the key", key, h, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("New(%q): %v", key, err)
		}
		values, expiry := h.Keys()
		if redistest.HashTag(values) != redistest.HashTag(expiry) || !strings.Contains(values, key) {
			t.Fatalf("expiring hash %q has keys %q and %q on different slots", key, values, expiry)
		}
	})
}
