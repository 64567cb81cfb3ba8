//go:build unix

package redistest

import "syscall"

var (
	stopSignal = syscall.SIGSTOP
	contSignal = syscall.SIGCONT
)
