//go:build !linux

package leader

import "syscall"

// setUserTimeout does nothing where TCP_USER_TIMEOUT is not known; the
// keepalives and the pings still end a dead connection.
func setUserTimeout(string, string, syscall.RawConn) error { return nil }
