package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/worksteal/worksteal/telemetry"
)

// TestExampleExportsRecruitmentsOverOTLP runs the example with the
// standard OTLP variables pointing at a receiver of the test's own, over
// each protocol, and checks that recruitment spans arrive with their
// attributes and a link to the span of the request that lent its time.
func TestExampleExportsRecruitmentsOverOTLP(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			var recv receiver
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			if protocol == "grpc" {
				srv := grpc.NewServer()
				collectorpb.RegisterTraceServiceServer(srv, &recv)
				go srv.Serve(ln)
				t.Cleanup(srv.Stop)
			} else {
				srv := &http.Server{Handler: http.HandlerFunc(recv.serveHTTP)}
				go srv.Serve(ln)
				t.Cleanup(func() { srv.Close() })
			}
			p := startExample(t, []string{
				"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + ln.Addr().String(),
				"OTEL_EXPORTER_OTLP_PROTOCOL=" + protocol,
				"OTEL_BSP_SCHEDULE_DELAY=200", // ms: export promptly
			})
			eventually(t, "a recruitment span linked to an exported request span", recv.linkedRecruitment)
			if code, out := p.stop(); code != 0 {
				t.Errorf("exit code %d after SIGTERM, want 0; output:\n%s", code, out)
			}
		})
	}
}

// receiver is an OTLP trace receiver: it keeps the recruitment spans, and
// the ids of every other span.
type receiver struct {
	collectorpb.UnimplementedTraceServiceServer
	mu      sync.Mutex
	recruit []*tracepb.Span
	others  map[string]string // span id -> trace id, hex
}

func (r *receiver) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.others == nil {
		r.others = map[string]string{}
	}
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				if s.GetName() == telemetry.SpanRecruit {
					r.recruit = append(r.recruit, s)
				} else {
					r.others[hex.EncodeToString(s.GetSpanId())] = hex.EncodeToString(s.GetTraceId())
				}
			}
		}
	}
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

// serveHTTP is the receiver over OTLP/HTTP with protobuf bodies.
func (r *receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var msg collectorpb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &msg)
	}
	if req.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, fmt.Sprintf("%s: %v", req.URL.Path, err), http.StatusBadRequest)
		return
	}
	resp, _ := r.Export(req.Context(), &msg)
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// linkedRecruitment finds a recruitment span that ran a slice, with the
// job, rate, outcome and items attributes, linked to a request span that
// arrived too.
func (r *receiver) linkedRecruitment(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.recruit) == 0 {
		return fmt.Errorf("no %s span yet; %d other spans", telemetry.SpanRecruit, len(r.others))
	}
	for _, s := range r.recruit {
		attrs := map[string]string{}
		for _, kv := range s.GetAttributes() {
			attrs[kv.GetKey()] = kv.GetValue().String()
		}
		complete := true
		for _, k := range []string{string(telemetry.AttrJob), string(telemetry.AttrRate), string(telemetry.AttrOutcome), string(telemetry.AttrItems)} {
			if attrs[k] == "" {
				complete = false
			}
		}
		if !complete {
			continue
		}
		for _, l := range s.GetLinks() {
			trace, ok := r.others[hex.EncodeToString(l.GetSpanId())]
			if ok && trace == hex.EncodeToString(l.GetTraceId()) {
				return nil
			}
		}
	}
	return errors.New("no recruitment span with job, rate, outcome and items linked to a request span that arrived")
}
