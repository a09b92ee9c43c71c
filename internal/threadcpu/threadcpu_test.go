package threadcpu

import (
	"runtime"
	"testing"
	"time"
)

// TestBurnIsCountedAndSleepIsNot: on one thread, a loop's CPU time shows
// and a sleep's does not.
func TestBurnIsCountedAndSleepIsNot(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m, ok := Now()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("no thread clock on linux")
		}
		return
	}
	began := time.Now()
	x := uint64(1)
	for time.Since(began) < 30*time.Millisecond {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	burnt, ok := m.Since()
	if !ok || burnt < 5*time.Millisecond || x == 0 {
		t.Fatalf("a 30ms loop read %v of CPU (ok %v), want at least 5ms", burnt, ok)
	}
	m, _ = Now()
	time.Sleep(30 * time.Millisecond)
	slept, ok := m.Since()
	if !ok || slept > 10*time.Millisecond {
		t.Fatalf("a 30ms sleep read %v of CPU (ok %v), want under 10ms", slept, ok)
	}
}

// TestAnotherThreadIsRefused: a mark read on another thread says so.
func TestAnotherThreadIsRefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		return
	}
	marks := make(chan Mark)
	go func() {
		runtime.LockOSThread() // this thread ends with the goroutine
		m, _ := Now()
		marks <- m
	}()
	m := <-marks
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if d, ok := m.Since(); ok {
		t.Fatalf("a mark of another thread read %v, want it refused", d)
	}
}

func BenchmarkMark(b *testing.B) {
	for b.Loop() {
		m, _ := Now()
		_, _ = m.Since()
	}
}
