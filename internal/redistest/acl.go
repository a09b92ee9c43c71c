package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClientAs returns a client of s that authenticates as an ACL user
// (AUTH username password on every connection), closed in t.Cleanup.
func (s *Server) ClientAs(t testing.TB, username, password string) *redis.Client {
	t.Helper()
	o := s.clientOptions()
	o.Username, o.Password = username, password
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// CommandStats returns the calls of every command since the server
// started (or since CONFIG RESETSTAT), per INFO commandstats, keyed by the
// lower-case name as Redis prints it ("evalsha", "client|setinfo").
// Deltas of two readings measure a test's traffic; the readings' own
// INFO calls are counted under "info".
func (s *Server) CommandStats(t testing.TB) map[string]int64 {
	t.Helper()
	stats := map[string]int64{}
	for name, c := range s.CommandTimes(t) {
		stats[name] = c.Calls
	}
	return stats
}

// CommandTime is one command's line of INFO commandstats: its calls and
// the time Redis spent in them, in µs. A script's time (evalsha, eval)
// includes the commands it ran, which are also counted on their own.
type CommandTime struct {
	Calls, Usec int64
}

// CommandTimes is [Server.CommandStats] with the time spent: the calls
// and µs of every command, keyed as CommandStats keys them.
func (s *Server) CommandTimes(t testing.TB) map[string]CommandTime {
	t.Helper()
	c := redis.NewClient(s.clientOptions())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatalf("redistest: INFO commandstats on %s: %v", s.Addr(), err)
	}
	stats := map[string]CommandTime{}
	for line := range strings.Lines(info) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok {
			continue
		}
		name, fields, _ := strings.Cut(rest, ":")
		var ct CommandTime
		for field := range strings.SplitSeq(fields, ",") {
			key, v, _ := strings.Cut(field, "=")
			var into *int64
			switch key {
			case "calls":
				into = &ct.Calls
			case "usec":
				into = &ct.Usec
			default:
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("redistest: parse %q: %v", line, err)
			}
			*into = n
		}
		stats[name] = ct
	}
	return stats
}
