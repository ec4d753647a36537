package leader

import (
	"net"
	"strconv"
	"time"
)

// The lock connection's keepalives: a peer that stops answering is
// noticed within about idle + interval × count (25 s) when the line is
// idle, and unacknowledged data fails the connection after userTimeout.
const (
	keepaliveIdle     = 10 * time.Second
	keepaliveInterval = 5 * time.Second
	keepaliveCount    = 3
	userTimeout       = 20 * time.Second
)

// keepaliveDialer dials with TCP keepalives and, where the OS has it,
// TCP_USER_TIMEOUT (setUserTimeout), set on the socket before it
// connects.
func keepaliveDialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{
		Timeout: timeout,
		KeepAliveConfig: net.KeepAliveConfig{
			Enable: true, Idle: keepaliveIdle, Interval: keepaliveInterval, Count: keepaliveCount,
		},
		Control: setUserTimeout,
	}
}

// seconds is d in whole seconds, as PostgreSQL's settings take it.
func seconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }
