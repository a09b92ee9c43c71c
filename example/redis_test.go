package main

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// TestEmbeddedRedisAnswersInfoMemory: the embedded miniredis says in one
// INFO line that it is not for production, answers INFO memory with
// noeviction (miniredis has no such section) and passes the other INFO
// sections through.
func TestEmbeddedRedisAnswersInfoMemory(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	rdb, closeRedis, err := connectRedis(t.Context(), options{}, io.Discard, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer closeRedis()
	if got := logs.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "level=INFO") || !strings.Contains(got, "not for production") {
		t.Errorf("connectRedis logged %q, want one INFO line saying not for production", got)
	}
	for _, section := range []string{"memory", "MEMORY"} {
		info, err := rdb.Info(t.Context(), section).Result()
		if err != nil || !strings.Contains(info, "maxmemory_policy:noeviction\r\n") {
			t.Errorf("INFO %s = %q, %v; want maxmemory_policy:noeviction", section, info, err)
		}
	}
	if info, err := rdb.Info(t.Context(), "clients").Result(); err != nil || !strings.Contains(info, "connected_clients:") {
		t.Errorf("INFO clients = %q, %v; want miniredis's own reply", info, err)
	}
}
