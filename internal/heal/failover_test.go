package heal

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
)

var setScript = redis.NewScript("return redis.call('SET', KEYS[1], ARGV[1])")

// A ClusterClient left at its defaults keeps dialling a killed master
// after its replica was promoted; through Scripter it finds the replica
// within about a second of the promotion.
func TestScripterFindsThePromotedReplica(t *testing.T) {
	t.Parallel()
	c := redistest.StartClusterWithReplicas(t)
	ctx := t.Context()
	const key = "{heal}k"
	slot, err := c.SlotOf(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	healed := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	bare := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = healed.Close(); _ = bare.Close() })
	for _, cc := range []*redis.ClusterClient{healed, bare} {
		if err := setScript.Run(ctx, cc, []string{key}, "before").Err(); err != nil {
			t.Fatal(err)
		}
	}

	f := c.KillMaster(t, slot)
	_, promotedAt := f.WaitPromoted(t, 30*time.Second)
	scripter := Scripter(healed)
	var failed int
	for {
		err := setScript.Run(ctx, scripter, []string{key}, "after").Err()
		if err == nil {
			break
		}
		failed++
		if time.Since(promotedAt) > 30*time.Second {
			t.Fatalf("still failing 30s after the promotion (%d reloads asked): %v", Reloads(healed), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	recovered := time.Since(promotedAt)
	// Loose for a loaded machine: the bound is one reload, 500ms apart.
	if recovered > 10*time.Second {
		t.Errorf("the healed client reached the promoted replica %v after the promotion, want within seconds", recovered)
	}
	if Reloads(healed) == 0 {
		t.Error("no reload was asked: the test proved nothing")
	}
	bareErr := setScript.Run(ctx, bare, []string{key}, "bare").Err()
	t.Logf("promoted %v after the kill; the healed client wrote %v after the promotion (%d calls failed, %d reloads asked); "+
		"a client without it, then: %v",
		promotedAt.Sub(f.KilledAt).Round(time.Millisecond), recovered.Round(time.Millisecond), failed, Reloads(healed), bareErr)
}
