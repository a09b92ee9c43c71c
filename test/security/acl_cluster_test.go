package security_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
)

// The grant serves a redis.ClusterClient too: it reads the command table
// with COMMAND and the slots with CLUSTER SLOTS, and follows an ASK
// redirect of a slot migration with ASKING. The application of TestLeastPrivilegeACLUser runs on a 3-master
// cluster as the ACL user, and ACL LOG stays empty on every master.
func TestLeastPrivilegeACLUserOnCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t)
	ctx := testrig.Context(t, 60*time.Second)
	var admins []*redis.Client
	for _, n := range cluster.Nodes() {
		admins = append(admins, createACLUser(t, ctx, n))
	}
	o := cluster.Options()
	o.Username, o.Password, o.DisableIdentity = "worksteal", "s3cret", true // as aclOptions
	rdb := redis.NewClusterClient(o)
	t.Cleanup(func() { _ = rdb.Close() })
	aclLog := func() []string {
		var out []string
		for i, admin := range admins {
			entries, err := admin.ACLLog(ctx, 100).Result()
			if err != nil {
				t.Fatalf("ACL LOG on master %d: %v", i, err)
			}
			for _, e := range entries {
				out = append(out, fmt.Sprintf("master %d: %s %s %s (%d)", i, e.Username, e.Reason, e.Object, e.Count))
			}
		}
		return out
	}

	a := startApp(t, rdb, appConfig{prefix: "worksteal", queue: "mail", hashKey: "worksteal:sessions", items: 100})
	testrig.Eventually(t, 30*time.Second, "the app's jobs done under the ACL user on a cluster", func() bool { return a.done(ctx, "") },
		func() string { return a.describe() + "ACL LOG:\n" + strings.Join(aclLog(), "\n") })
	a.shutdown(t)
	a.checkResults(t, ctx)

	// A key of the user whose slot is migrating, moved already: its old
	// master answers ASK, and the client asks the new one with ASKING.
	const key = "worksteal:lock:asked"
	if err := cluster.Client(t).Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	slot, err := cluster.SlotOf(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	from, err := cluster.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	to := cluster.Nodes()[0]
	if to == from {
		to = cluster.Nodes()[1]
	}
	m, err := cluster.BeginSlotMigration(t, ctx, slot, from, to)
	if err != nil {
		t.Fatal(err)
	}
	for {
		n, err := m.MoveKeys(ctx, 100)
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		if n == 0 {
			break
		}
	}
	if v, err := rdb.Get(ctx, key).Result(); err != nil || v != "v" {
		t.Errorf("GET %s during %v as the ACL user = %q, %v; want v", key, m, v, err)
	}
	if err := m.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if log := aclLog(); len(log) != 0 {
		t.Fatalf("ACL LOG after the run has %d entries, want none:\n%s", len(log), strings.Join(log, "\n"))
	}
}
