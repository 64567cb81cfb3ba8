//go:build !unix

package rie

import "os/exec"

// The emulator runs on Linux only; elsewhere this package merely compiles.
func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
