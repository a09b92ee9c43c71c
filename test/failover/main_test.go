package failover_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain is goleak.VerifyTestMain, but patient: a go-redis pool that
// failed to dial the killed master redials every second and sees that its
// client was closed only when it wakes, later than goleak's own retries.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(3 * time.Second)
		for err := goleak.Find(); err != nil; err = goleak.Find() {
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
				code = 1
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	os.Exit(code)
}
