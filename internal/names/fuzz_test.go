package names_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/worksteal/worksteal/internal/names"
)

// FuzzKeys: for any prefix and name that Check accepts, the keys worksteal
// builds from them (a job's lock "PREFIX:lock:NAME", a queue's hash tag
// "{PREFIX:q:NAME}") split back into exactly those parts, so no name can
// reach into another prefix's keys, and the hash tag is the whole braced
// part, so every key of a queue stays on one cluster slot. Errors are
// printable: they quote the input, whatever its bytes.
func FuzzKeys(f *testing.F) {
	for _, s := range [][2]string{
		{"worksteal", "tidy.orders"}, {"a", "b:c"}, {"a:b", "c"}, {"p", "x}:lock:{y"},
		{"{p}", "n"}, {"p", "*"}, {"", ""}, {"p", "\xff\x00"}, {strings.Repeat("p", 129), "n"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, prefix, name string) {
		perr, nerr := names.Check(prefix), names.Check(name)
		for _, err := range []error{perr, nerr} {
			// %q writes a byte as at most 4 characters (\xff).
			if err != nil && (!utf8.ValidString(err.Error()) || len(err.Error()) > 4*names.MaxLen+100) {
				t.Fatalf("error %q is not printable, or longer than its quoted input", err)
			}
		}
		if perr != nil || nerr != nil {
			return
		}
		lock := prefix + ":lock:" + name
		if parts := strings.Split(lock, ":"); len(parts) != 3 || parts[0] != prefix || parts[2] != name {
			t.Fatalf("lock key %q does not split back into %q and %q", lock, prefix, name)
		}
		tag := "{" + prefix + ":q:" + name + "}"
		key := tag + ":pending"
		lb, rb := strings.IndexByte(key, '{'), strings.IndexByte(key, '}')
		if lb != 0 || key[lb+1:rb] != prefix+":q:"+name || strings.Count(key, "{")+strings.Count(key, "}") != 2 {
			t.Fatalf("key %q: the hash tag is not {%s:q:%s} alone", key, prefix, name)
		}
	})
}
