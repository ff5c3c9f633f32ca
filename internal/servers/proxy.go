package servers

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy of the test's own on 127.0.0.1 that forwards each
// connection it accepts to an upstream address. The test can switch the
// upstream of new connections (Switch), stop forwarding in both directions
// without closing anything (BlackHole, then Lift), and cut every
// connection (Cut). It counts the connections it accepts and how many are
// open. Its methods are safe for concurrent use.
//
// Its black hole holds the bytes in user space: the client's kernel still
// gets its TCP acknowledgements, so a client sees a peer that stopped
// answering (as a hung server), not lost packets. TCP keepalive and
// TCP_USER_TIMEOUT do not find such a connection dead; only a deadline of
// the client's own does.
type Proxy struct {
	// Addr is the proxy's host:port.
	Addr string

	ln       net.Listener
	upstream atomic.Pointer[string]
	accepted atomic.Int64
	open     atomic.Int64

	mu    sync.Mutex            // guards the fields below
	gate  chan struct{}         // closed while forwarding; open while black-holed
	conns map[net.Conn]struct{} // both ends of every open pair
	dials []time.Time           // when each connection was accepted
	done  bool

	wg sync.WaitGroup
}

// StartProxy starts a proxy to upstream (host:port). It is closed, with all
// its connections, when the test ends.
func StartProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}}
	p.gate = make(chan struct{})
	close(p.gate)
	p.upstream.Store(&upstream)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Port returns the proxy's port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Switch sends the connections accepted from now on to upstream; those
// open now stay where they are.
func (p *Proxy) Switch(upstream string) { p.upstream.Store(&upstream) }

// BlackHole stops forwarding bytes in both directions on every connection,
// those open and those accepted from now on, without closing any. New
// connections are accepted (the kernel completes the handshake) but not
// connected upstream until Lift.
func (p *Proxy) BlackHole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default:
	}
}

// Lift forwards again what BlackHole held, and everything after it.
func (p *Proxy) Lift() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

// Cut closes every open connection, both ends, as a reset would.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Accepted returns how many connections the proxy has accepted.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Open returns how many accepted connections are still open.
func (p *Proxy) Open() int64 { return p.open.Load() }

// AcceptedBetween returns how many connections were accepted at or after
// from and before to.
func (p *Proxy) AcceptedBetween(from, to time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, d := range p.dials {
		if !d.Before(from) && d.Before(to) {
			n++
		}
	}
	return n
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines to end.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.done = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.done {
			p.mu.Unlock()
			_ = c.Close()
			return
		}
		p.conns[c] = struct{}{}
		p.dials = append(p.dials, time.Now())
		p.mu.Unlock()
		p.accepted.Add(1)
		p.open.Add(1)
		p.wg.Add(1)
		go p.serve(c)
	}
}

// waitGate waits until the proxy forwards, and reports whether it is still
// open.
func (p *Proxy) waitGate() bool {
	p.mu.Lock()
	g := p.gate
	p.mu.Unlock()
	<-g
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.done
}

func (p *Proxy) forget(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		if c != nil {
			_ = c.Close()
			delete(p.conns, c)
		}
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer p.open.Add(-1)
	if !p.waitGate() {
		p.forget(c)
		return
	}
	u, err := net.DialTimeout("tcp", *p.upstream.Load(), 5*time.Second)
	if err != nil {
		p.forget(c)
		return
	}
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		_ = u.Close()
		p.forget(c)
		return
	}
	p.conns[u] = struct{}{}
	p.mu.Unlock()
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.pipe(u, c) }()
	go func() { defer both.Done(); p.pipe(c, u) }()
	both.Wait()
	p.forget(c, u)
}

// pipe copies from src to dst, holding each chunk while the proxy is
// black-holed; when either side ends it closes both.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitGate() {
				break
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil { // io.EOF or a closed connection
			break
		}
	}
	_ = src.Close()
	_ = dst.Close()
}
