package failover

import (
	"net"
	"sync"
	"testing"
)

// proxy is a TCP proxy in front of a store node, the way a managed
// endpoint is a name in front of whichever node is primary: switch moves
// it to another node and drops every connection it carries, so clients
// reconnect and find the new one. hold stops the bytes in both directions
// without closing anything (a replication link that has fallen behind);
// release lets them flow again.
type proxy struct {
	ln      net.Listener
	mu      sync.Mutex
	backend string
	conns   map[net.Conn]struct{}
	flowing chan struct{} // closed while bytes flow
	done    chan struct{}
}

func startProxy(tb testing.TB, backend string) *proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &proxy{ln: ln, backend: backend, conns: map[net.Conn]struct{}{}, flowing: make(chan struct{}), done: make(chan struct{})}
	close(p.flowing)
	go p.accept()
	tb.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		backend := p.backend
		p.mu.Unlock()
		b, err := net.Dial("tcp", backend)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, b) {
			return
		}
		go p.pipe(c, b)
		go p.pipe(b, c)
	}
}

// track registers a pair of connections, false once the proxy is closed.
func (p *proxy) track(c, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		_, _ = c.Close(), b.Close()
		return false
	default:
	}
	p.conns[c], p.conns[b] = struct{}{}, struct{}{}
	return true
}

// pipe copies from src to dst, waiting while the proxy holds.
func (p *proxy) pipe(src, dst net.Conn) {
	defer func() { _, _ = src.Close(), dst.Close(); p.forget(src, dst) }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			flowing := p.flowing
			p.mu.Unlock()
			select {
			case <-flowing:
			case <-p.done:
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF or a dropped connection: close both ends
			return
		}
	}
}

func (p *proxy) forget(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

// switchTo sends new connections to backend and drops the open ones.
func (p *proxy) switchTo(backend string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backend = backend
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *proxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.flowing:
		p.flowing = make(chan struct{})
	default:
	}
}

func (p *proxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.flowing:
	default:
		close(p.flowing)
	}
}

func (p *proxy) close() {
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		return
	default:
	}
	close(p.done)
	p.mu.Unlock()
	_ = p.ln.Close()
	p.switchTo("")
}
