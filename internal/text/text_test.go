package text_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/worksteal/worksteal/internal/text"
)

func TestTruncate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s      string
		n      int
		suffix string
		want   string
	}{
		{"", 0, "…", ""},
		{"abc", 3, "…", "abc"},                          // fits: no suffix
		{"abcd", 3, "", "abc"},                          // the queue's causes
		{"abcdef", 5, "…", "ab…"},                       // "…" is 3 bytes
		{"abcdef", 2, "…", "ab"},                        // the suffix does not fit: left out
		{"abcdef", -1, "…", ""},                         // nothing fits
		{"aé", 2, "", "a"},                              // é is 2 bytes: not split
		{"日本語", 7, "", "日本"},                            // 3-byte runes
		{"日本語", 8, "…", "日…"},                           // 5 bytes left for text: one rune
		{"a😀b", 4, "", "a"},                             // 4-byte rune
		{"a😀b", 5, "", "a😀"},                            // exactly fits up to the rune
		{"\x80\x80\x80\x80\x80\x80", 5, "", "\x80\x80"}, // invalid bytes: backs up at most 3
	}
	for _, tt := range tests {
		if got := text.Truncate(tt.s, tt.n, tt.suffix); got != tt.want {
			t.Errorf("Truncate(%q, %d, %q) = %q, want %q", tt.s, tt.n, tt.suffix, got, tt.want)
		}
	}
}

// The result fits in n, starts with a prefix of s, ends with the suffix
// when it cut, keeps valid UTF-8 valid, and cuts no more than a rune
// short of the room it had.
func FuzzTruncate(f *testing.F) {
	f.Add("日本語のテキスト", 10, "…")
	f.Add("a😀b", 4, "")
	f.Add("\xff\x80\x80", 2, "...")
	f.Fuzz(func(t *testing.T, s string, n int, suffix string) {
		n %= 1 << 16 // keep the room sane; negative stays negative
		got := text.Truncate(s, n, suffix)
		if len(s) <= n {
			if got != s {
				t.Fatalf("Truncate(%q, %d, %q) = %q: changed a string that fits", s, n, suffix, got)
			}
			return
		}
		if len(got) > max(n, 0) {
			t.Fatalf("Truncate(%q, %d, %q) = %q: %d bytes, over %d", s, n, suffix, got, len(got), n)
		}
		kept := got
		if len(suffix) <= max(n, 0) {
			if !strings.HasSuffix(got, suffix) {
				t.Fatalf("Truncate(%q, %d, %q) = %q: no suffix", s, n, suffix, got)
			}
			kept = strings.TrimSuffix(got, suffix)
		}
		if !strings.HasPrefix(s, kept) {
			t.Fatalf("Truncate(%q, %d, %q) = %q: not a prefix of s", s, n, suffix, got)
		}
		if room := max(n, 0) - (len(got) - len(kept)); len(kept) < room-(utf8.UTFMax-1) {
			t.Fatalf("Truncate(%q, %d, %q) = %q: kept %d bytes of a room of %d", s, n, suffix, got, len(kept), room)
		}
		if utf8.ValidString(s) && !utf8.ValidString(kept) {
			t.Fatalf("Truncate(%q, %d, %q) = %q: split a rune", s, n, suffix, got)
		}
	})
}
