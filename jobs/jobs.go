package jobs

import (
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/worksteal/worksteal/internal/names"
)

// Errors of this package. Those about a config or an argument wrap a
// message naming the field or argument.
var (
	ErrInvalidConfig   = errors.New("jobs: invalid config")
	ErrInvalidArgument = errors.New("jobs: invalid argument")
	ErrHandlerPanic    = errors.New("jobs: handler panicked")
)

// checkName validates a configured job name as the recruiter does.
func checkName(name string) error {
	if err := names.Check(name); err != nil {
		return fmt.Errorf("%w: Name: %v", ErrInvalidConfig, err)
	}
	return nil
}

// jobName is kind + "." + subject when that is a valid name. Otherwise the
// subject's invalid bytes become '_', it is cut to fit, and 8 hex digits
// of its FNV-1a hash are appended, so that distinct subjects keep distinct,
// stable names.
func jobName(kind, subject string) string {
	name := kind + "." + subject
	if checkName(name) == nil {
		return name
	}
	clean := []byte(subject)
	for i, c := range clean {
		if names.Check(string(c)) != nil { // one byte: no allocation
			clean[i] = '_'
		}
	}
	h := fnv.New32a()
	h.Write([]byte(subject))
	suffix := fmt.Sprintf("-%08x", h.Sum32())
	if room := names.MaxLen - len(kind) - 1 - len(suffix); len(clean) > room {
		clean = clean[:room]
	}
	return kind + "." + string(clean) + suffix
}
