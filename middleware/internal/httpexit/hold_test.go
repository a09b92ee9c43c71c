package httpexit_test

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/worksteal/worksteal/middleware/internal/httpexit"
)

// script is a handler made of ops, two bytes each: what to do, and an
// argument.
func script(ops []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(ops); i += 2 {
			arg := int(ops[i+1])
			switch ops[i] % 8 {
			case 0:
				w.WriteHeader(100 + arg%5*100 + arg%7) // 1xx to 5xx
			case 1:
				_, _ = w.Write([]byte(strings.Repeat("b", arg*16))) // up to 4 KiB
			case 2:
				_, _ = io.WriteString(w, strings.Repeat("s", arg))
			case 3:
				w.Header().Set("X-Op", strings.Repeat("h", arg%4))
			case 4:
				http.NewResponseController(w).Flush()
			case 5:
				w.Header().Set(http.TrailerPrefix+"X-Sum", "42")
			case 6:
				w.Header().Set("Content-Type", "text/x-op")
			case 7:
				w.Header().Set("Trailer", "X-Declared")
				w.Header().Set("X-Declared", "1")
			}
		}
	}
}

func record(h http.Handler) (*http.Response, string, bool) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body), rec.Flushed
}

// FuzzRelease: whatever a handler writes, in whatever order, a held
// response handed on with Release is what the writer below gets without
// Hold: status, header, body, trailers and flushes.
func FuzzRelease(f *testing.F) {
	f.Add([]byte{1, 1})
	f.Add([]byte{3, 1, 0, 100, 3, 2, 1, 200, 5, 0})
	f.Add([]byte{0, 3, 0, 100, 1, 1, 4, 0, 1, 2})
	f.Add([]byte{6, 0, 2, 5, 3, 1, 7, 0, 1, 130, 1, 1})
	f.Add([]byte{0, 102, 1, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		want, wantBody, wantFlushed := record(script(ops))
		got, gotBody, gotFlushed := record(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			resp := httpexit.Hold(w, r)
			script(ops)(resp.Writer(), r)
			resp.Release()
		}))
		if got.StatusCode != want.StatusCode || gotBody != wantBody || gotFlushed != wantFlushed ||
			!reflect.DeepEqual(got.Header, want.Header) || !reflect.DeepEqual(got.Trailer, want.Trailer) {
			t.Fatalf("held and released: %d %v %q flushed %v trailer %v\nwithout: %d %v %q flushed %v trailer %v",
				got.StatusCode, got.Header, gotBody, gotFlushed, got.Trailer, want.StatusCode, want.Header, wantBody, wantFlushed, want.Trailer)
		}
	})
}

// TestSendSizesAHeldResponse: on a real HTTP/1.1 server, a fast exit's
// response sent by Send is what net/http sends without Hold: a small one
// with its Content-Length (net/http's own when the handler returns), a
// larger or flushed one, or one with trailers, chunked; the status and
// header as written.
func TestSendSizesAHeldResponse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		method  string // GET if empty
		handler http.HandlerFunc
		status  int
		length  int64 // -1: chunked
		trailer string
	}{
		{"small", "", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }, 200, 5, ""},
		{"nothing", "", func(w http.ResponseWriter, r *http.Request) {}, 200, 0, ""},
		{"head", http.MethodHead, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }, 200, 5, ""},
		{"head without a body", http.MethodHead, func(w http.ResponseWriter, r *http.Request) {}, 200, -1, ""},
		{"status", "", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) }, 404, 0, ""},
		{"no content", "", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }, 204, 0, ""},
		{"the handler's length", "", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "5")
			io.WriteString(w, "hello")
		}, 200, 5, ""},
		{"at the limit", "", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 2048)) }, 200, 2048, ""},
		{"past the limit", "", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 2049)) }, 200, -1, ""},
		{"flushed", "", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "a")
			w.(http.Flusher).Flush()
			io.WriteString(w, "b")
		}, 200, -1, ""},
		{"trailers", "", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Sum")
			io.WriteString(w, "hello")
			w.Header().Set("X-Sum", "42")
		}, 200, -1, "42"},
		{"trailers set after a small body", "", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "hello")
			w.Header().Set(http.TrailerPrefix+"X-Sum", "42") // net/http drops them
		}, 200, 5, ""},
		{"header changed after the status", "", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			w.Header().Set("X-Late", "ignored, as net/http ignores it")
			io.WriteString(w, "hello")
		}, 202, 5, ""},
	} {
		held := get(t, tc.method, func(w http.ResponseWriter, r *http.Request) {
			resp := httpexit.Hold(w, r)
			tc.handler(resp.Writer(), r)
			if err := resp.Send(); err != nil {
				t.Errorf("%s: Send: %v", tc.name, err)
			}
		})
		bare := get(t, tc.method, tc.handler)
		if held != bare {
			t.Errorf("%s: held and sent: %s; without Hold: %s", tc.name, held, bare)
		}
		if want := fmt.Sprintf("%d, Content-Length %d, trailer %q, X-Late %q", tc.status, tc.length, tc.trailer, ""); held != want {
			t.Errorf("%s: %s, want %s", tc.name, held, want)
		}
	}
}

// get serves h on a test server and sums up its response to one request.
func get(t *testing.T, method string, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(cmp.Or(method, http.MethodGet), srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(res.Body)
	res.Body.Close()
	return fmt.Sprintf("%d, Content-Length %d, trailer %q, X-Late %q", res.StatusCode, res.ContentLength, res.Trailer.Get("X-Sum"), res.Header.Get("X-Late"))
}

// TestHijackedIsLeftAlone: a handler that takes the connection over owns
// it: Send writes nothing and reports no error.
func TestHijackedIsLeftAlone(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp := httpexit.Hold(w, r)
		conn, rw, err := http.NewResponseController(resp.Writer()).Hijack()
		if err != nil {
			t.Errorf("Hijack: %v", err)
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
		rw.Flush()
		if !resp.Hijacked() || resp.Send() != nil {
			t.Errorf("Hijacked %v; Send after a hijack must do nothing", resp.Hijacked())
		}
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if string(body) != "hi" {
		t.Fatalf("the client got %q, want the handler's own hi", body)
	}
}
