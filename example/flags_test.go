package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// TestParseFlagsFromEnv sets variables, so it cannot run in parallel.
func TestParseFlagsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		check   func(options) bool
		wantErr string
	}{
		{name: "defaults", check: func(o options) bool {
			return o.traffic && !o.redisTLS && o.adminAddr == "127.0.0.1:8079"
		}},
		{name: "TRAFFIC=false", env: map[string]string{"TRAFFIC": "false"}, check: func(o options) bool { return !o.traffic }},
		{name: "TRAFFIC=0", env: map[string]string{"TRAFFIC": "0"}, check: func(o options) bool { return !o.traffic }},
		{name: "the flag wins", env: map[string]string{"TRAFFIC": "false"}, args: []string{"-traffic"}, check: func(o options) bool { return o.traffic }},
		{name: "TRAFFIC=nope", env: map[string]string{"TRAFFIC": "nope"}, wantErr: "$TRAFFIC"},
		{name: "DEBUG=1", env: map[string]string{"DEBUG": "1"}, check: func(o options) bool { return o.debug }},
		{name: "DEBUG=0", env: map[string]string{"DEBUG": "0"}, check: func(o options) bool { return !o.debug }},
		{name: "DEBUG=yes", env: map[string]string{"DEBUG": "yes"}, wantErr: "$DEBUG"},
		{name: "ADMIN_ADDR", env: map[string]string{"ADMIN_ADDR": "127.0.0.1:9999"}, check: func(o options) bool { return o.adminAddr == "127.0.0.1:9999" }},
		{name: "REDIS_TLS=1 on a cluster", env: map[string]string{"REDIS_TLS": "1", "REDIS_ADDRS": "a:1"}, check: func(o options) bool { return o.redisTLS }},
		{name: "REDIS_TLS=1 with rediss://", env: map[string]string{"REDIS_TLS": "1", "REDIS_URL": "rediss://r:6380"}, check: func(o options) bool { return o.redisTLS }},
		{name: "-redis-tls with redis://", args: []string{"-redis-tls", "-redis=redis://r:6379"}, wantErr: "rediss://"},
		{name: "ADMIN_ADDR empty", env: map[string]string{"ADMIN_ADDR": ""}, wantErr: "-admin"},
		{name: "-redis-tls without Redis", args: []string{"-redis-tls"}, wantErr: "-redis-addrs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{"TRAFFIC", "DEBUG", "ADMIN_ADDR", "REDIS_TLS", "REDIS_ADDRS", "REDIS_URL"} {
				t.Setenv(name, tc.env[name]) // restored at the end
				if _, ok := tc.env[name]; !ok {
					os.Unsetenv(name)
				}
			}
			o, err := parseFlags(tc.args, io.Discard)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("parseFlags: %v, want an error mentioning %q", err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("parseFlags: %v", err)
			case !tc.check(o):
				t.Errorf("parseFlags: %+v, not as expected", o)
			}
		})
	}
}

func TestDecodeOrder(t *testing.T) {
	t.Parallel()
	want := order{Customer: "ada", ItemID: 7, Quantity: 2}
	valid := `{"customer":"ada","item_id":7,"quantity":2}`
	for _, tc := range []struct {
		name, body string
		code       int // 0: decoded
	}{
		{"one object", valid, 0},
		{"white space after it", valid + " \n\t", 0},
		{"a second object", valid + `{"customer":"bob"}`, http.StatusBadRequest},
		{"garbage after it", valid + "x", http.StatusBadRequest},
		{"a number after it", valid + " 1", http.StatusBadRequest},
		{"empty", "", http.StatusBadRequest},
		{"malformed", `{"customer":`, http.StatusBadRequest},
		{"a wrong type", `{"customer":"ada","item_id":"7"}`, http.StatusBadRequest},
		{"over the limit", `{"customer":"` + strings.Repeat("x", maxOrderBytes) + `"}`, http.StatusRequestEntityTooLarge},
		{"a valid order, then too much", valid + strings.Repeat(" ", maxOrderBytes), http.StatusRequestEntityTooLarge},
	} {
		o, err := decodeOrder(httptest.NewRecorder(), io.NopCloser(strings.NewReader(tc.body)))
		if tc.code == 0 {
			if err != nil || o != want {
				t.Errorf("%s: %+v, %v; want %+v", tc.name, o, err, want)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: decoded %+v, want an error", tc.name, o)
			continue
		}
		if code := errorCode(err); code != tc.code {
			t.Errorf("%s: %v answers %d, want %d", tc.name, err, code, tc.code)
		}
		w := httptest.NewRecorder()
		writeError(w, err)
		if body := strings.TrimSuffix(w.Body.String(), "\n"); strings.Contains(body, "\n") || w.Code != tc.code {
			t.Errorf("%s: response %d %q, want %d and one line", tc.name, w.Code, body, tc.code)
		}
	}
}

func TestPrintTourPrintsURLs(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var buf bytes.Buffer
	printTour(&buf, &listeners{http: ln, echo: ln, grpc: ln, admin: ln})
	admin := "http://" + ln.Addr().String()
	for _, want := range []string{"dashboard: " + admin + "/debug/worksteal", "metrics:   " + admin + "/metrics"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the tour lacks %q:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "open ") {
		t.Errorf("the tour says open, a macOS command:\n%s", buf.String())
	}
}

// TestConnectRedisClusterTLS checks what a cluster client first sends to a
// node: a TLS ClientHello (a handshake record, 0x16) with -redis-tls, a
// RESP command ('*') without.
func TestConnectRedisClusterTLS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tls  bool
		want byte
	}{{true, 0x16}, {false, '*'}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		first := make(chan byte, 1)
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				b := make([]byte, 1)
				conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.ReadFull(conn, b); err == nil {
					select {
					case first <- b[0]:
					default:
					}
				}
				conn.Close()
			}
		}()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, _, err = connectRedis(ctx, options{redisAddrs: ln.Addr().String(), redisTLS: tc.tls}, io.Discard, slog.New(slog.DiscardHandler))
		cancel()
		ln.Close()
		if err == nil {
			t.Fatalf("tls %t: connected to a node that hangs up", tc.tls)
		}
		select {
		case b := <-first:
			if b != tc.want {
				t.Errorf("tls %t: the client's first byte is %#x, want %#x", tc.tls, b, tc.want)
			}
		default:
			t.Errorf("tls %t: the client sent nothing (%v)", tc.tls, err)
		}
	}
}
