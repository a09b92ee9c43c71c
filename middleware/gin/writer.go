package stealgin

import (
	"bufio"
	"io"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worksteal/worksteal/middleware/internal/httpexit"
)

// writer is the gin.ResponseWriter of a drawn request's chain: gin's own
// bookkeeping (a status recorded until the first write, the size written)
// over the held response, so that handlers and middleware see what they
// see on gin's writer. The embedded writer is gin's (the one below), for
// CloseNotify and Pusher, which the hold has nothing to do with.
type writer struct {
	gin.ResponseWriter
	held   http.ResponseWriter // the hold's writer, over below
	status int
	size   int      // -1 until the header is written, as gin counts
	below  flushing // what the hold writes to, here to save an allocation
}

func (w *writer) WriteHeader(code int) {
	if code > 0 && !w.Written() {
		w.status = code
	}
}

func (w *writer) WriteHeaderNow() {
	if !w.Written() {
		w.size = 0
		w.held.WriteHeader(w.status)
	}
}

func (w *writer) Write(p []byte) (int, error) {
	w.WriteHeaderNow()
	n, err := w.held.Write(p)
	w.size += n
	return n, err
}

func (w *writer) WriteString(s string) (int, error) {
	w.WriteHeaderNow()
	n, err := io.WriteString(w.held, s)
	w.size += n
	return n, err
}

func (w *writer) Status() int   { return w.status }
func (w *writer) Size() int     { return w.size }
func (w *writer) Written() bool { return w.size != -1 }

// Flush sends the status, then what is held, and flushes, as gin's does.
func (w *writer) Flush() {
	w.WriteHeaderNow()
	w.held.(http.Flusher).Flush()
}

// Hijack hands the connection over as gin's does: the response counts as
// written, and gin's writer below refuses once a body went out.
func (w *writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.size < 0 {
		w.size = 0
	}
	return w.held.(http.Hijacker).Hijack()
}

// Unwrap is for http.ResponseController (deadlines, full duplex), as
// gin's writer has it.
func (w *writer) Unwrap() http.ResponseWriter { return w.held }

// handOn gives what the chain wrote, as it wrote it, to gin's writer
// below: a status set but not written becomes that writer's, which gin
// writes after the chain.
func (w *writer) handOn(resp *httpexit.Response) {
	if !w.Written() {
		w.ResponseWriter.WriteHeader(w.status)
	}
	resp.Release()
}

// flushing is gin's writer below, as the hold's writer to send through,
// with a flush that reports whether it flushed: gin's Flush does not say,
// and an inline slice must not run before its response is sent (a writer
// that cannot flush sends it to the background).
type flushing struct{ gin.ResponseWriter }

func (f *flushing) FlushError() error {
	u, ok := f.ResponseWriter.(interface{ Unwrap() http.ResponseWriter })
	if !ok {
		return http.NewResponseController(f.ResponseWriter).Flush()
	}
	f.WriteHeaderNow()
	return http.NewResponseController(u.Unwrap()).Flush()
}

func (f *flushing) Unwrap() http.ResponseWriter { return f.ResponseWriter }
