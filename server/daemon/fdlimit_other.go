//go:build !unix

package daemon

import "errors"

// processFDLimits: no RLIMIT_NOFILE here, nothing to check.
type processFDLimits struct{}

func (processFDLimits) get() (soft, hard uint64, err error) {
	return 0, 0, errors.New("no RLIMIT_NOFILE on this system")
}

func (processFDLimits) raise(uint64) error { return errors.ErrUnsupported }
