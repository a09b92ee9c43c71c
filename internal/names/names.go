// Package names checks the names worksteal puts into Redis keys, hash
// tags, span attributes and metric labels: job names, queue names and key
// prefixes.
package names

import (
	"errors"
	"fmt"
)

// MaxLen is the longest name, in bytes.
const MaxLen = 128

// Check accepts 1 to MaxLen bytes of [A-Za-z0-9._-]: no separator of our
// key layout (':'), no hash-tag brace, nothing a metrics backend escapes.
func Check(name string) error {
	if name == "" {
		return errors.New("name is empty")
	}
	if len(name) > MaxLen {
		return fmt.Errorf("name %.20q... is longer than %d bytes", name, MaxLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("name %q has %q at byte %d; use only [A-Za-z0-9._-]", name, name[i:i+1], i)
		}
	}
	return nil
}
