// Package adaptertest is the conformance suite of worksteal's adapters:
// stealhttp, stealgin, stealecho (echo v4 and v5) and stealgrpc each run
// it, and each supplies only its glue. A promise of the adapters is tested here
// once, for all of them (River's riverdrivertest does the same for its
// drivers).
//
// # Hosts
//
// A [Host] serves a small service of [Answer]s (a cached answer, a slow
// one, a failure...) behind its adapter on the recruiters the suite gives
// it, or bare, and calls it as a client would. [Exercise] runs the
// scenarios every adapter shares:
//
//   - a dismissed request is untouched: the same response, and the handler
//     gets what the layer outside the adapter passed on;
//   - a drawn request gets the same response as without the adapter, and
//     runs a slice exactly when it was a fast exit;
//   - the classifier sees the status (or code) the client receives, and
//     whether the handler marked the request;
//   - the recruitment span links to the request's span;
//   - a background slice starts after everything outside the adapter has
//     returned, and a job that sleeps, panics or fails changes nothing the
//     client sees;
//   - nothing a client sends makes a request recruited or a fast exit;
//   - two adapters around one service both see the handler's mark.
//
// An adapter on net/http describes its service with an [HTTPHost] and
// runs [ExerciseHTTP], which adds what net/http promises: the whole
// response is on the connection before a background slice starts
// (HTTP/1.1), and in inline mode it is sent before the slice runs; a
// chunked response's last chunk alone may follow.
//
// The test rig is [stealtest]: a recruiter on a throw-away Redis whose
// roll the suite sets, and one job whose behaviour it sets.
package adaptertest
