// Package httpexit is the part of worksteal's net/http middlewares
// (stealhttp, stealgin, and stealecho for echo v4 and v5) that handles
// the response of a drawn request, so that a background slice starts only
// once the whole response is on the connection.
//
// # Why
//
// net/http cancels a request's context, which starts a background slice,
// before it writes what the handler left in its buffers: a small
// response's headers and body, and a chunked response's last chunk. The
// slice would then start first.
//
// # How
//
// [Hold] wraps a drawn request's writer. It holds the status, headers and
// body back while the body fits net/http's own buffer (2,048 bytes), which
// net/http holds until the handler returns anyway, so that the client
// sees the same bytes at the same time as without it. After a fast exit,
// [Response.Send] writes the held response with its Content-Length, as
// net/http would have set it, and flushes, so that the response is
// complete on an HTTP/1.1 connection before the handler returns. On
// HTTP/2 it leaves a 204 or 304 unflushed: net/http ends its stream with
// the headers only once the handler has returned. After any other
// response, [Response.Release] hands it on as written.
//
// What cannot be held (a body past the buffer without a Content-Length, a
// handler's flush, trailers) is chunked on HTTP/1.1, and its last chunk
// still follows the handler: the middlewares' docs say so.
//
// [Stealer] is the flow of a drawn request in a router framework whose
// middleware take a context of their own (echo v4 and v5), written once;
// [Router] is what it needs to know of the framework.
//
// The nested modules of the gin and echo adapters import this package:
// its API changes only together with theirs, and every module of the
// repository is released at the same version.
package httpexit
