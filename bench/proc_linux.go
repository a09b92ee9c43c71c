package main

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel kill cmd if the benchmark dies without
// cleaning up (SIGKILL, a crash), so no redis-server is left behind.
func setDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
