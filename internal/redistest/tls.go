package redistest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TLSServer is a redis-server that speaks TLS only (--port 0), with a
// certificate for 127.0.0.1 signed by a CA made for the test.
type TLSServer struct {
	// CA is the pool holding the test CA: put it in tls.Config.RootCAs.
	CA *x509.CertPool
	// CAFile is the CA certificate in PEM, for tools that take a file.
	CAFile string

	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartTLS generates a CA and a server certificate (ECDSA P-256, IP SAN
// 127.0.0.1) and starts a TLS-only redis-server on a free port, stopped in
// t.Cleanup. Clients need not present a certificate (--tls-auth-clients no).
// The server is not a [Server]: Kill, Restart and the like are not offered.
func StartTLS(t testing.TB) *TLSServer {
	t.Helper()
	bin := localBinary(t, "StartTLS")
	s := &TLSServer{dir: t.TempDir()}
	certFile, keyFile := s.writeCerts(t)
	t.Cleanup(s.stop)
	var err error
	for range startAttempts {
		port := freePorts(t, 1)[0]
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		args := []string{
			"--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--tls-cert-file", certFile, "--tls-key-file", keyFile,
			"--tls-ca-cert-file", s.CAFile, "--tls-auth-clients", "no",
			"--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log"),
			"--daemonize", "no", "--save", "", "--appendonly", "no",
		}
		if err = s.launch(bin, args); err == nil {
			return s
		}
		s.stop()
		if log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log")); !strings.Contains(string(log), "Address already in use") {
			break
		}
	}
	log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	stderr, _ := os.ReadFile(filepath.Join(s.dir, "stderr.log"))
	t.Fatalf("redistest: start TLS redis-server %s (is it built with TLS? `%s --tls-port 1 --version`): %v\n%s\n%s", bin, bin, err, log, stderr)
	return nil
}

// Addr returns "127.0.0.1:port".
func (s *TLSServer) Addr() string { return s.addr }

// URL returns "rediss://127.0.0.1:port/0", for redis.ParseURL.
func (s *TLSServer) URL() string { return "rediss://" + s.addr + "/0" }

// Client returns a client that trusts the test CA, closed in t.Cleanup.
func (s *TLSServer) Client(t testing.TB) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(s.URL())
	if err != nil {
		t.Fatalf("redistest: parse %s: %v", s.URL(), err)
	}
	opts.TLSConfig.RootCAs = s.CA
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = dialTimeout, ioTimeout, ioTimeout
	opts.ContextTimeoutEnabled = true
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// writeCerts makes the CA and the server's key pair and writes them as PEM.
func (s *TLSServer) writeCerts(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	now := time.Now()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "worksteal redistest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("redistest: create CA: %v", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("redistest: parse CA: %v", err)
	}
	srvKey := newKey(t)
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("redistest: create server certificate: %v", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatalf("redistest: marshal key: %v", err)
	}
	s.CA = x509.NewCertPool()
	s.CA.AddCert(ca)
	s.CAFile = writePEM(t, s.dir, "ca.crt", "CERTIFICATE", caDER)
	return writePEM(t, s.dir, "server.crt", "CERTIFICATE", srvDER),
		writePEM(t, s.dir, "server.key", "EC PRIVATE KEY", keyDER)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("redistest: generate key: %v", err)
	}
	return k
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("redistest: write %s: %v", name, err)
	}
	return path
}

// launch starts the process and waits until it answers PING over TLS
// with its own pid in INFO (not another test's server on a reused port).
func (s *TLSServer) launch(bin string, args []string) error {
	out, err := os.Create(filepath.Join(s.dir, "stderr.log"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(s.done)
	cl := redis.NewClient(&redis.Options{
		Addr: s.addr, TLSConfig: &tls.Config{RootCAs: s.CA, ServerName: "127.0.0.1"},
		DialTimeout: 100 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, MaxRetries: -1,
	})
	defer cl.Close()
	deadline := time.Now().Add(readyTimeout)
	want := "\nprocess_id:" + strconv.Itoa(cmd.Process.Pid) + "\r\n"
	for {
		select {
		case <-s.done:
			return errExited
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		info, err := cl.Info(ctx, "server").Result()
		cancel()
		if err == nil && strings.Contains(info, want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no TLS PING reply from our redis-server on %s within %v (last error: %v)", s.addr, readyTimeout, err)
		}
		time.Sleep(pollInterval)
	}
}

func (s *TLSServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd, s.done = nil, nil
}
