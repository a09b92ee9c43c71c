package security_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
)

// Over a TLS-only Redis (--port 0, a CA made by the test), a client from a
// rediss:// URL with the CA in RootCAs runs the recruiter and the queue
// with its jobs; a client without the CA is refused with a certificate
// error, and a plain-text client gets nowhere.
func TestTLS(t *testing.T) {
	t.Parallel()
	srv := redistest.StartTLS(t)
	ctx := testrig.Context(t, 60*time.Second)

	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	if opts.TLSConfig == nil {
		t.Fatalf("ParseURL(%q) gave no TLS config", srv.URL())
	}
	opts.TLSConfig.RootCAs = srv.CA
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })

	a := startApp(t, rdb, appConfig{prefix: "tls", queue: "mail", hashKey: "tls:sessions", items: 200})
	testrig.Eventually(t, 30*time.Second, "the app's jobs done over TLS", func() bool { return a.done(ctx, "") }, a.describe)
	a.shutdown(t)
	a.checkResults(t, ctx)
	// Every job ran over TLS. (A slice may still time out on a loaded
	// machine, a new connection's handshake counting against its budget:
	// logged, not failed.)
	for _, js := range a.rec.Stats().Jobs {
		if js.Ran == 0 {
			t.Errorf("job %s never ran over TLS: %+v", js.Name, js)
		}
		if js.Failed() != 0 {
			t.Logf("job %s over TLS: %d errors, %d timeouts of %d slices", js.Name, js.Errors, js.Timeouts, js.Slices)
		}
	}

	// Without the CA: the system roots do not know it.
	bare, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	bare.MaxRetries = -1
	untrusting := redis.NewClient(bare)
	t.Cleanup(func() { _ = untrusting.Close() })
	err = untrusting.Ping(ctx).Err()
	var unknown x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	if !errors.As(err, &unknown) && !errors.As(err, &verify) {
		t.Fatalf("PING without the CA: err = %v (%T), want a certificate verification error", err, err)
	}

	// Plain text on the TLS port: the handshake never completes.
	plain := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ReadTimeout: time.Second, DialTimeout: time.Second})
	t.Cleanup(func() { _ = plain.Close() })
	if err := plain.Ping(ctx).Err(); err == nil || strings.Contains(err.Error(), "PONG") {
		t.Fatalf("plain-text PING on the TLS port: err = %v, want a failure", err)
	}
	t.Logf("TLS round trip on %s: %d items drained; without the CA: %v", srv.Addr(), len(a.ids), err)
}
