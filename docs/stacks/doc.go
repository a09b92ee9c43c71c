// Package stacks is the code of docs/stacks.md: how to wire worksteal
// into each Go web stack. Each snippet of the page is the body of one of
// this package's functions (less its final return), which
// TestPageShowsTheCode checks, so that go vet and go test compile every
// snippet against the stack it names; TestStacks serves each on a real
// recruiter and checks that a cache hit runs a slice and a miss does not.
//
// It is a module of its own so that chi, gorilla/mux, connect-go, huma,
// fiber and the rest stay out of every other module's graph. It is not
// for import.
package stacks
