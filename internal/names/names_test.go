package names_test

import (
	"strings"
	"testing"

	"github.com/worksteal/worksteal/internal/names"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "tidy.orders", "drain_orders-2", strings.Repeat("x", names.MaxLen)} {
		if err := names.Check(ok); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
	for bad, mention := range map[string]string{
		"":                                  "empty",
		strings.Repeat("x", names.MaxLen+1): "longer",
		"a:b":                               "[A-Za-z0-9._-]",
		"{tag}":                             "[A-Za-z0-9._-]",
		"with space":                        "[A-Za-z0-9._-]",
		"tidé":                              "[A-Za-z0-9._-]",
	} {
		if err := names.Check(bad); err == nil || !strings.Contains(err.Error(), mention) {
			t.Errorf("Check(%q) = %v, want an error mentioning %q", bad, err, mention)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"", "a", "a:b", "{x}", "tidé"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := names.Check(s)
		valid := len(s) > 0 && len(s) <= names.MaxLen && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == ""
		if (err == nil) != valid {
			t.Fatalf("Check(%q) = %v, want valid=%v", s, err, valid)
		}
	})
}
