package security_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/recruiter"
)

// The recruiter's start-up check passes for the documented grant (which
// has no PING) and leaves ACL LOG empty: it tries commands with
// redis.acl_check_cmd, which logs nothing.
func TestCheckPassesWithTheGrant(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testrig.Context(t, 30*time.Second)
	admin := createACLUser(t, ctx, srv)
	rdb := redis.NewClient(aclOptions(srv.Options()))
	t.Cleanup(func() { _ = rdb.Close() })
	rec, err := recruiter.New(rdb, recruiter.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Shutdown(context.Background()) })
	if err := rec.Check(ctx); err != nil {
		t.Fatalf("Check = %v, want nil for the documented grant", err)
	}
	if n := len(admin.Do(ctx, "ACL", "LOG").Val().([]any)); n != 0 {
		t.Fatalf("ACL LOG has %d entries after Check, want none", n)
	}
}
