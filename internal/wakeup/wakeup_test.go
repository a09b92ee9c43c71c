package wakeup

import "testing"

func TestBellReachesListenersUntilStopped(t *testing.T) {
	t.Parallel()
	b := For("{test:q:bell}")
	if For("{test:q:bell}") != b {
		t.Fatal("For gave two bells for one tag")
	}
	var one, two int
	stopOne := b.Listen(func() { one++ })
	stopTwo := b.Listen(func() { two++ })
	b.Ring()
	stopOne()
	b.Ring()
	stopTwo()
	stopTwo() // twice is harmless
	b.Ring()
	if one != 1 || two != 2 {
		t.Fatalf("heard %d and %d rings; want 1 and 2", one, two)
	}
	For("{test:q:nobody}").Ring() // no listener: nothing happens
}

func BenchmarkRingUnheard(b *testing.B) {
	bell := For("{bench:q:unheard}")
	b.ReportAllocs()
	for b.Loop() {
		bell.Ring()
	}
}
