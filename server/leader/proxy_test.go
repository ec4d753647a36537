package leader

import (
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// stallingProxy forwards TCP to PostgreSQL until stalled: then it keeps
// every connection open and accepts new ones, but forwards nothing, as a
// network that drops packets does.
type stallingProxy struct {
	url    string // the PostgreSQL URL through the proxy
	ln     net.Listener
	target string
	flow   sync.RWMutex // held for writing while stalled

	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func newStallingProxy(t *testing.T, pgURL string) *stallingProxy {
	t.Helper()
	u, err := url.Parse(pgURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &stallingProxy{ln: ln, target: u.Host}
	u.Host = ln.Addr().String()
	p.url = u.String()
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *stallingProxy) stall()  { p.flow.Lock() }
func (p *stallingProxy) resume() { p.flow.Unlock() }

func (p *stallingProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *stallingProxy) serve(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, s) {
		return
	}
	go p.pipe(s, c)
	p.pipe(c, s)
}

func (p *stallingProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	p.conns = append(p.conns, cs...)
	return true
}

// pipe copies from src to dst, a read at a time, each write waiting while
// the proxy is stalled; it closes both when either side ends.
func (p *stallingProxy) pipe(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.flow.RLock()
			_, werr := dst.Write(buf[:n])
			p.flow.RUnlock()
			if werr != nil {
				return
			}
		}
		if err != nil { // io.EOF or a closed connection
			return
		}
	}
}

func (p *stallingProxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
}
