package adaptertest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/worksteal/worksteal/recruiter"
)

// lastChunk ends a chunked response (without trailers).
const lastChunk = "0\r\n\r\n"

// wholeResponseBeforeTheSlice: when a fast exit's slice starts, its
// connection has every byte of the response, on HTTP/1.1; a chunked one
// every byte but its last chunk, which net/http writes once the handler
// has returned. Each request has a connection of its own.
//
// In background mode the connection holds back what the server writes
// once its handler has returned until the slice has started: a response
// that net/http only writes after the handler (after it has cancelled
// the request's context, which starts the slice) is then missing when the
// slice starts, on every run, however the machine schedules the two.
//
// In inline mode the slice also blocks until the test lets it go: the
// client must read a whole response (but a chunked one) meanwhile, and
// must not see a chunked one end.
func wholeResponseBeforeTheSlice(t *testing.T, h HTTPHost, inline bool) {
	e := newEnv(t, h, inline)
	type start struct {
		conn *wireConn
		sent []byte // what the connection had when the slice started
	}
	starts := make(chan start, 1)
	release, abandon := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(abandon) }) // a failed test must not leave the server waiting on a slice
	e.rig.SetJob(func(ctx context.Context) (recruiter.Report, error) {
		c, _ := ctx.Value(connKey{}).(*wireConn) // the job's context has the request's values
		if c == nil {
			starts <- start{}
			return recruiter.Report{}, nil
		}
		starts <- start{c, c.sent()}
		c.sliceStarted()
		if inline {
			select {
			case <-release:
			case <-abandon:
			}
		}
		return recruiter.Report{}, nil
	})
	with := h.serve(t, Setup{Recruiters: []*recruiter.Recruiter{e.rig.Rec}, Around: e.around}, !inline, false)
	e.rig.Draw()
	for _, a := range h.Answers() {
		if a.Runs == 0 {
			continue
		}
		e.rig.ForgetCoolOffs()
		replied := make(chan error, 1)
		go func() {
			_, err := with.get(with.fresh, a.Name, nil)
			replied <- err
		}()
		var st start
		select {
		case st = <-starts:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no slice started within 10s", a.Name)
		}
		if st.conn == nil {
			t.Fatalf("%s: the slice's context lacks the request's values", a.Name)
		}
		var err error
		replyRead := false
		if inline {
			if chunked[a.Name] {
				select {
				case err = <-replied:
					replyRead = true
					t.Errorf("%s: the chunked response ended (%v) while its inline slice ran", a.Name, err)
				case <-time.After(20 * time.Millisecond):
				}
			} else if err, replyRead = <-replied, true; err != nil {
				t.Errorf("%s: the response could not be read whole while its inline slice ran: %v", a.Name, err)
			}
			release <- struct{}{}
		}
		if !replyRead {
			if err = <-replied; err != nil {
				t.Errorf("%s: %v", a.Name, err)
			}
		}
		e.settle(t)
		all := st.conn.sent()
		want := all
		if chunked[a.Name] {
			want = bytes.TrimSuffix(all, []byte(lastChunk))
		}
		if !bytes.Equal(st.sent, want) {
			t.Errorf("%s: when the slice started, the connection had %d bytes of the response's %d:\n%q\nthen:\n%q",
				a.Name, len(st.sent), len(all), st.sent, all[min(len(st.sent), len(all)):])
		}
	}
}
