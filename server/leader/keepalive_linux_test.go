package leader

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestLockConnectionKeepsItsKeepalives: without startup parameters (which
// a PgBouncer refuses), the lock connection still has its keepalives: as
// socket options on seatd's side, and as session settings on PostgreSQL's.
func TestLockConnectionKeepsItsKeepalives(t *testing.T) {
	t.Parallel()
	e := New(Config{PostgresURL: testSchema(t), InstanceID: "keepalive"})
	conn, err := e.connect(t.Context(), applicationPrefix+"keepalive")
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()

	tcp, ok := conn.PgConn().Conn().(*net.TCPConn)
	require.True(t, ok, "the test PostgreSQL URL is a TCP one")
	raw, err := tcp.SyscallConn()
	require.NoError(t, err)
	opt := func(level, name int) int {
		var v int
		var gerr error
		require.NoError(t, raw.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), level, name) }))
		require.NoError(t, gerr)
		return v
	}
	require.Equal(t, 1, opt(unix.SOL_SOCKET, unix.SO_KEEPALIVE))
	require.Equal(t, int(keepaliveIdle/time.Second), opt(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE))
	require.Equal(t, int(keepaliveInterval/time.Second), opt(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL))
	require.Equal(t, keepaliveCount, opt(unix.IPPROTO_TCP, unix.TCP_KEEPCNT))
	require.Equal(t, int(userTimeout/time.Millisecond), opt(unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT))

	for name, want := range map[string]string{
		"tcp_keepalives_idle": "10", "tcp_keepalives_interval": "5", "tcp_keepalives_count": "3", "tcp_user_timeout": "20000",
	} {
		var got string
		require.NoError(t, conn.QueryRow(t.Context(), "SHOW "+name).Scan(&got))
		require.Equal(t, want, got, name)
	}
}
