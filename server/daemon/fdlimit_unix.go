//go:build unix

package daemon

import "syscall"

// processFDLimits is RLIMIT_NOFILE of this process.
type processFDLimits struct{}

func (processFDLimits) get() (soft, hard uint64, err error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	return uint64(rl.Cur), uint64(rl.Max), nil
}

func (processFDLimits) raise(soft uint64) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return err
	}
	rl.Cur = soft
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
}
