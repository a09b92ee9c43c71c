package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSecondInterruptKills sends SIGINT, waits until the example is in the
// last step of its shutdown (flushing spans to an OTLP endpoint that never
// answers, which takes up to 5s), and sends SIGINT again: the process must
// end at once with exit code 130, also when it started with SIGINT ignored.
func TestSecondInterruptKills(t *testing.T) {
	t.Parallel()
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		hole.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	p := startExample(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + hole.Addr().String()}, "-traffic=false")
	// A span for the exporter to flush at the end.
	client := &http.Client{Transport: &http.Transport{}}
	if resp, body := httpDo(t, client, http.MethodGet, "http://"+p.http+"/items/1", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /items/1: %s %s", resp.Status, body)
	}
	client.CloseIdleConnections()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// The final summary comes just before the exporters flush.
	eventually(t, "the final summary is printed", func(context.Context) error {
		if !strings.Contains(p.log(), "\nfinal  requests ") {
			return errors.New("not yet")
		}
		return nil
	})
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("%v\n%s", err, p.log())
	}
	select {
	case <-p.exited:
	case <-time.After(3 * time.Second): // well before the flush's own 5s
		t.Fatal("the example still runs after a second SIGINT")
	}
	var exit *exec.ExitError
	if !errors.As(p.err, &exit) || exit.ExitCode() != exitForced {
		t.Fatalf("exit: %v, want exit code %d\n%s", p.err, exitForced, p.log())
	}
}
