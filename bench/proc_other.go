//go:build !linux

package main

import "os/exec"

// setDeathSignal does nothing off Linux: children are killed on every
// exit the benchmark sees (return, error, Ctrl-C), not after a SIGKILL.
func setDeathSignal(*exec.Cmd) {}
