// Package text cuts strings that go into bounded places: a dead letter's
// cause in Redis, a recruitment's error on the status page.
package text

import "unicode/utf8"

// Truncate returns s if it fits in n bytes; otherwise s cut to at most
// n-len(suffix) bytes, never inside a UTF-8 sequence, followed by suffix.
// The result never exceeds n bytes (none for a negative n): a suffix
// longer than n is left out.
//
// The cut backs up at most utf8.UTFMax-1 bytes to a rune's start, which
// is enough for valid UTF-8; invalid bytes are cut where they fall rather
// than dropping a long run of them.
func Truncate(s string, n int, suffix string) string {
	n = max(n, 0)
	if len(s) <= n {
		return s
	}
	if len(suffix) > n {
		suffix = ""
	}
	cut := n - len(suffix)
	for back := 0; back < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(s[cut]); back++ {
		cut--
	}
	return s[:cut] + suffix
}
