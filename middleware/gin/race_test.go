//go:build race

package stealgin_test

// raceEnabled: under the race detector sync.Pool drops items at random, so
// gin's pooled contexts make allocation counts through gin meaningless.
const raceEnabled = true
