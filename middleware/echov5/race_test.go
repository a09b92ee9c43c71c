//go:build race

package stealecho_test

// raceEnabled: under the race detector sync.Pool drops items at random, so
// echo's pooled contexts make allocation counts through echo meaningless.
const raceEnabled = true
