package stealhttp_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

// BenchmarkEndAfterSliceStart measures, per protocol, how long after a
// drawn fast exit's background slice has started the server wrote the
// last bytes of its response to the connection (the end-*-µs figures;
// negative: before the slice started), on loopback with a keep-alive
// client: the bound the package doc states. On HTTP/1.1 the middleware
// sends the response whole before the handler returns; on HTTP/2,
// net/http ends a stream (an empty DATA frame with END_STREAM) only once
// the handler has returned and it has cancelled the request's context,
// which starts the slice.
func BenchmarkEndAfterSliceStart(b *testing.B) {
	for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
		b.Run(proto, func(b *testing.B) {
			rig := stealtest.New(b, false)
			type start struct {
				request int64
				at      time.Time
			}
			starts := make(chan start, 16)
			rig.SetJob(func(ctx context.Context) (recruiter.Report, error) {
				request, _ := ctx.Value(requestKey{}).(int64)
				select {
				case starts <- start{request, time.Now()}:
				default:
				}
				return recruiter.Report{Items: 1, More: true}, nil // backlog remains: no rest after the slice
			})
			mw := stealhttp.Middleware(rig.Rec)(http.HandlerFunc(cacheHit))
			var requests atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mw.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, requests.Add(1))))
			}))
			lastWrite := &atomic.Int64{} // unix ns of the server's last write
			srv.Listener = &timedListener{Listener: srv.Listener, last: lastWrite}
			protocols := new(http.Protocols)
			if proto == "HTTP/2" {
				protocols.SetUnencryptedHTTP2(true)
			} else {
				protocols.SetHTTP1(true)
			}
			srv.Config.Protocols = protocols
			srv.Start()
			b.Cleanup(srv.Close)
			client := &http.Client{Transport: &http.Transport{Protocols: protocols}}
			b.Cleanup(client.CloseIdleConnections)
			rig.Draw()

			var gaps []time.Duration
			missed := 0  // requests whose slice did not start (gated on a busy machine)
			drained := 0 // the rig's runs read
			for b.Loop() {
				resp, err := client.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				if resp.ProtoMajor != int(proto[5]-'0') {
					b.Fatalf("the response came over %s, want %s", resp.Proto, proto)
				}
				_, err = io.ReadAll(resp.Body) // the end of the response has been written
				resp.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
				request, deadline := requests.Load(), time.After(time.Second)
			wait:
				for {
					select {
					case s := <-starts:
						if s.request == request {
							gaps = append(gaps, time.Unix(0, lastWrite.Load()).Sub(s.at))
							break wait
						}
					case <-deadline:
						missed++
						break wait
					}
				}
				if missed > 10 {
					b.Fatalf("%d requests' slices did not start: %+v", missed, rig.Rec.Stats())
				}
				rig.Settle(b)
				for ; drained < rig.Started(); drained++ {
					rig.NextRun(b) // the rig's record of runs is bounded: a full one would block the job
				}
			}
			if len(gaps) == 0 {
				b.Fatalf("no slice started: %+v", rig.Rec.Stats())
			}
			b.ReportMetric(float64(missed), "missed")
			slices.Sort(gaps)
			at := func(q float64) float64 { return float64(gaps[int(q*float64(len(gaps)-1))].Microseconds()) }
			b.ReportMetric(at(0.5), "end-after-start-p50-µs")
			b.ReportMetric(at(0.99), "end-after-start-p99-µs")
			b.ReportMetric(at(1), "end-after-start-max-µs")
			after := len(gaps) - slices.IndexFunc(gaps, func(d time.Duration) bool { return d > 0 })
			if after > len(gaps) {
				after = 0 // none ended after its slice started
			}
			b.ReportMetric(100*float64(after)/float64(len(gaps)), "%-ended-after-start")
		})
	}
}

type requestKey struct{}

// timedListener's connections store the time of their last write.
type timedListener struct {
	net.Listener
	last *atomic.Int64
}

func (l *timedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return &timedConn{Conn: c, last: l.last}, err
}

type timedConn struct {
	net.Conn
	last *atomic.Int64
}

func (c *timedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.last.Store(time.Now().UnixNano())
	return n, err
}

func cacheHit(w http.ResponseWriter, r *http.Request) {
	recruiter.MarkFastExit(r.Context())
	io.WriteString(w, "cached answer")
}
