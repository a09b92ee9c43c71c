package security_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// eventually polls cond until it holds, failing the test after within
// with what and the state more describes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool, more func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s\n%s", within, what, more())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
