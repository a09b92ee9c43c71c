//go:build !race

package stealgin_test

const raceEnabled = false
