//go:build unix

package rie

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the emulator in its own process group, so that
// stopping it also stops the bootstrap it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
