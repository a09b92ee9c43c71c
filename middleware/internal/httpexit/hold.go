package httpexit

import (
	"bufio"
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/felixge/httpsnoop"

	"github.com/worksteal/worksteal/recruiter"
)

// holdMax is the most body a Response holds back: net/http's own buffer
// before it starts chunking (bufferBeforeChunkingSize), which it holds
// until the handler returns anyway. A response that fits it gets its
// Content-Length from net/http without us, so holding it is invisible.
// HTTP/2's buffer before it frames a body is twice that
// (http2handlerChunkWriteSize): holdMaxHTTP2.
const (
	holdMax      = 2048
	holdMaxHTTP2 = 4096
)

// errNotFlushed is Send's answer for a response it does not flush.
var errNotFlushed = errors.New("httpexit: a 204 or 304 on HTTP/2 goes out when the handler returns")

type state uint8

const (
	idle     state = iota // nothing written yet
	holding               // a final status, its header and the body so far are held back
	passing               // written through as the handler writes
	hijacked              // the connection is the handler's
)

// Response is a drawn request's response, held back while it is small.
// It is used by one request's goroutine, as a ResponseWriter is.
type Response struct {
	w        http.ResponseWriter // the writer below
	wrapped  http.ResponseWriter // the writer the handler gets
	head     bool                // a HEAD request: net/http drops its body
	h2       bool                // HTTP/2 or later: a flush cannot end a stream
	state    state
	status   int         // the first final status written, 0 for none yet
	explicit bool        // the held status was written, not implied by a write
	header   http.Header // the header as it stood when the held status was written
	body     []byte      // the held body
	writes   []int       // where each held write ends in body, to hand them on as made

	// Room for a small body and a few writes, so that holding them costs
	// no allocation of its own.
	bodyBuf   [512]byte
	writesBuf [4]int
}

// Hold returns a Response for w, the writer of req. The handler is to
// write to [Response.Writer], and one of [Response.Send] (a fast exit, see
// [Response.Enlist]) or [Response.Release] (any other response) is to
// follow once it has returned.
func Hold(w http.ResponseWriter, req *http.Request) *Response {
	r := &Response{w: w, head: req.Method == http.MethodHead, h2: req.ProtoMajor >= 2}
	r.body, r.writes = r.bodyBuf[:0], r.writesBuf[:0]
	r.wrapped = httpsnoop.Wrap(w, httpsnoop.Hooks{
		WriteHeader: func(httpsnoop.WriteHeaderFunc) httpsnoop.WriteHeaderFunc { return r.writeHeader },
		// WriteString comes here too (httpsnoop routes it to the Write hook).
		Write: func(httpsnoop.WriteFunc) httpsnoop.WriteFunc { return r.write },
		// A copy from a reader of unknown size (a file) is not held.
		ReadFrom: func(next httpsnoop.ReadFromFunc) httpsnoop.ReadFromFunc {
			return func(src io.Reader) (int64, error) {
				r.record(http.StatusOK)
				r.spill()
				return next(src)
			}
		},
		// A flush sends the status written so far, 200 if none, and
		// streams. FlushError comes here too (httpsnoop routes it to the
		// Flush hook, and keeps its error).
		Flush: func(next httpsnoop.FlushFunc) httpsnoop.FlushFunc {
			return func() {
				r.record(http.StatusOK)
				r.spill()
				next()
			}
		},
		Hijack: func(next httpsnoop.HijackFunc) httpsnoop.HijackFunc {
			return func() (net.Conn, *bufio.ReadWriter, error) {
				r.spill()
				conn, rw, err := next()
				if err == nil {
					r.state = hijacked
				}
				return conn, rw, err
			}
		},
	})
	return r
}

// Writer is the ResponseWriter for the handler: it keeps every optional
// interface of the one below (http.Flusher, http.Hijacker, io.ReaderFrom,
// http.Pusher...) and unwraps for http.ResponseController. A write it
// holds back reports success; if the writer below refuses it once it is
// handed on, that error is dropped.
func (r *Response) Writer() http.ResponseWriter { return r.wrapped }

// Status is the status the client gets: the first final one written, 200
// if none was (what net/http sends for a handler that wrote only a body,
// flushed, or wrote nothing).
func (r *Response) Status() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

// Hijacked reports that the handler took the connection over.
func (r *Response) Hijacked() bool { return r.state == hijacked }

// Enlist sends a fast exit's response ([Response.Send]), then hands the
// slice to the recruiter with draw.Enlist(ctx, ...): in background mode
// the slice starts once ctx is done; in inline mode it runs now, unless
// the response was not flushed (a 204 or 304 on HTTP/2) or could not be
// (as under http.TimeoutHandler), and then it goes to the background.
func (r *Response) Enlist(ctx context.Context, draw recruiter.Draw) {
	err := r.Send()
	draw.Enlist(ctx, func() error { return err })
}

// Send writes what is held, with a Content-Length when the response may
// have one and has none (net/http would have set the same), then flushes:
// on HTTP/1.1 a response that was held (or whose handler set its
// Content-Length) is then complete on the connection. It returns the
// flush's error, or an error without flushing a 204 or 304 on HTTP/2 or
// later, which goes out whole when the handler returns; it does nothing
// to a hijacked connection.
func (r *Response) Send() error {
	switch r.state {
	case hijacked:
		return nil
	case idle:
		r.commit(http.StatusOK) // a handler that wrote nothing gets net/http's empty 200
		r.explicit = true
	}
	if r.state == holding && r.sizable() {
		r.header.Set("Content-Length", strconv.Itoa(len(r.body)))
	}
	r.spill()
	if r.h2 && (r.status == http.StatusNoContent || r.status == http.StatusNotModified) {
		// net/http's HTTP/2 server ends a stream with its HEADERS frame
		// only once the handler has returned: flushed before, they go
		// without END_STREAM and without a Content-Length, and the
		// client reads a body of unknown length.
		return errNotFlushed
	}
	return http.NewResponseController(r.w).Flush()
}

// Release hands on what is held as the handler wrote it, and stops
// holding; net/http then ends the response as it would have.
func (r *Response) Release() { r.spill() }

func (r *Response) writeHeader(code int) {
	switch {
	case r.state == passing || r.state == hijacked:
		r.record(code)
		r.w.WriteHeader(code)
	case code < 100 || code > 999:
		r.w.WriteHeader(code) // panics in the handler, as without us
	case r.state == holding:
		// A second final status is superfluous: net/http ignores it.
	case code == http.StatusSwitchingProtocols:
		r.state = passing // a protocol switch is not held
		r.w.WriteHeader(code)
	case code < 200:
		r.w.WriteHeader(code) // 103 Early Hints and the like go out at once
	default:
		r.commit(code)
		r.explicit = true
	}
}

func (r *Response) write(b []byte) (int, error) {
	r.commit(http.StatusOK)
	if r.state == holding && len(r.body)+len(b) > r.holdMax() {
		r.spill()
	}
	if r.state != holding {
		return r.w.Write(b)
	}
	r.body = append(r.body, b...)
	r.writes = append(r.writes, len(r.body))
	return len(b), nil
}

// holdMax is the most body r holds back, net/http's buffer for r's protocol.
func (r *Response) holdMax() int {
	if r.h2 {
		return holdMaxHTTP2
	}
	return holdMax
}

// commit starts holding code as the response's status, with the header
// as it stands (net/http ignores the header's later changes but for its
// trailers), unless a status was written before.
func (r *Response) commit(code int) {
	if r.state != idle {
		return
	}
	r.record(code)
	r.header = r.w.Header().Clone()
	r.state = holding
}

func (r *Response) record(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
}

// spill writes what is held to the writer below, as the handler wrote it
// (a status written, or implied by the first write: held, or the one
// about to be written through), with the header as
// it stood when the status was; the header as it stands now is put back
// after, for net/http's trailers. From then on it writes through.
func (r *Response) spill() {
	switch r.state {
	case idle:
		r.state = passing
		return
	case holding:
	default:
		return
	}
	r.state = passing
	live := r.w.Header()
	var now http.Header
	if !equal(live, r.header) {
		now = live.Clone()
		replace(live, r.header)
	}
	if r.explicit {
		r.w.WriteHeader(r.status)
	}
	start := 0
	for _, end := range r.writes {
		_, _ = r.w.Write(r.body[start:end]) // as the handler's write would have, its error is the handler's to ignore
		start = end
		if now != nil {
			replace(live, now) // the header went with the status or the first write
			now = nil
		}
	}
	if now != nil {
		replace(live, now)
	}
	r.body, r.writes = nil, nil
}

// sizable reports whether the held response may be given a Content-Length
// of its body's length, as net/http gives one: a status that has a body,
// no length set by the handler, no other framing, no trailers (which need
// chunking) when the status was written; for a HEAD request, whose body
// net/http drops, only if the handler wrote one.
func (r *Response) sizable() bool {
	if r.head && len(r.body) == 0 || r.status == http.StatusNoContent || r.status == http.StatusNotModified {
		return false
	}
	for _, k := range []string{"Content-Length", "Transfer-Encoding", "Trailer"} {
		if _, ok := r.header[k]; ok {
			return false
		}
	}
	// net/http looks for trailers in the header as it stood at the
	// status, as here: a small body whose trailers were set after it goes
	// out with a Content-Length, and without them.
	for k := range r.header {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			return false
		}
	}
	return true
}

func equal(a, b http.Header) bool {
	return maps.EqualFunc(a, b, slices.Equal)
}

func replace(dst, src http.Header) {
	clear(dst)
	maps.Copy(dst, src)
}
