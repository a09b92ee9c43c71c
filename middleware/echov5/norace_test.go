//go:build !race

package stealecho_test

const raceEnabled = false
