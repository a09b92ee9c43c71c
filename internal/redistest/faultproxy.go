package redistest

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// FaultProxy is a TCP proxy on a free loopback port between clients and a
// Redis, for faults the server process itself cannot show: a slow network
// ([FaultProxy.SetDelay]) and connections cut at once ([FaultProxy.Drop]).
// Point a client at [FaultProxy.Addr] instead of the server's address.
type FaultProxy struct {
	t      testing.TB
	target string
	ln     net.Listener

	delay    atomic.Int64 // ns added before each chunk Redis sends back
	dropping atomic.Bool  // new connections are closed as soon as accepted
	accepted atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // both ends of every live pair
	closed chan struct{}         // closed by Close: pending delays end at once
	wg     sync.WaitGroup
}

// StartFaultProxy listens on a free loopback port and forwards every
// connection to target ("host:port"); it is closed in t.Cleanup.
func StartFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: fault proxy: listen: %v", err)
	}
	p := &FaultProxy{t: t, target: target, ln: ln, conns: map[net.Conn]struct{}{}, closed: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's "127.0.0.1:port".
func (p *FaultProxy) Addr() string { return p.ln.Addr().String() }

// Accepted counts the client connections accepted so far (dropped ones too).
func (p *FaultProxy) Accepted() int64 { return p.accepted.Load() }

// SetDelay makes the proxy hold each chunk that Redis sends back for d
// before passing it on, so every reply arrives at least d late; 0 heals.
func (p *FaultProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Drop cuts every live connection and closes new ones as soon as they are
// accepted, as a network that resets connections would, until [FaultProxy.Heal].
func (p *FaultProxy) Drop() {
	p.dropping.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Heal ends Drop and SetDelay: connections made from now on work normally.
func (p *FaultProxy) Heal() {
	p.dropping.Store(false)
	p.SetDelay(0)
}

// Close stops listening, cuts every connection and waits for the proxy's
// goroutines to end. It is idempotent.
func (p *FaultProxy) Close() {
	p.mu.Lock()
	select {
	case <-p.closed:
	default:
		close(p.closed)
		_ = p.ln.Close()
		for c := range p.conns {
			_ = c.Close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *FaultProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.t.Logf("redistest: fault proxy: accept: %v", err)
			}
			return
		}
		p.accepted.Add(1)
		if p.dropping.Load() {
			_ = client.Close()
			continue
		}
		server, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		p.wg.Add(2)
		go p.pipe(server, client, false) // requests pass as they come
		go p.pipe(client, server, true)  // replies wait for the delay
	}
}

// track registers a pair; false (both closed) once the proxy is closed.
// A pair dialled while Drop ran is closed too, under the lock Drop holds,
// so none outlives a Drop; its pipes end at once.
func (p *FaultProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.closed:
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	default:
	}
	if p.dropping.Load() {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies src to dst until either fails, then closes both, so the
// other direction ends too.
func (p *FaultProxy) pipe(dst, src net.Conn, delayed bool) {
	defer p.wg.Done()
	defer func() {
		_ = src.Close()
		_ = dst.Close()
		p.mu.Lock()
		delete(p.conns, src)
		delete(p.conns, dst)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(p.delay.Load()); delayed && d > 0 && !p.wait(d) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF, a reset, or Drop/Close closed it
			return
		}
	}
}

// wait sleeps for d, or until the proxy closes (false).
func (p *FaultProxy) wait(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-p.closed:
		return false
	}
}
