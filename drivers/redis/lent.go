package redisward

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wardpool/wardpool"
)

// lent is a pooled connection's network connection handed to a client of
// Pool.Client for as long as that client keeps it: a *redis.Conn until its
// Close, a Tx until its function returns, a PubSub until its Close. Close
// ends the loan: the connection goes back to the pool, or is destroyed when
// the client left state on it (a subscription, SELECT, a WATCH without its
// EXEC…), when reading or writing failed, or when the client itself was
// closed (it may close a connection another goroutine still uses).
//
// It reads what the client writes (requests are arrays of bulk strings)
// to learn the name of each command, as the pooled client's hook does, and
// knows the client's handshake from what the pool opened connections with.
type lent struct {
	net.Conn
	f *front
	l wardpool.Loan[*conn]

	mu    sync.Mutex // guards the fields below
	scan  reqScanner
	shake bool // the client's handshake is being written (see note)
	cmds  int  // commands written so far
	dirty bool // a command left state the next borrower would inherit
	watch bool // a WATCH or MULTI is open
	lost  bool // a read or write failed, or the scanner lost its place
	done  bool // Close was called
}

func newLent(f *front, l wardpool.Loan[*conn]) *lent {
	return &lent{Conn: l.Value().nc, f: f, l: l, shake: true}
}

func (w *lent) Write(b []byte) (int, error) {
	w.mu.Lock()
	if !w.scan.feed(b, w.note) {
		w.lost = true
	}
	w.mu.Unlock()
	n, err := w.Conn.Write(b)
	if err != nil {
		w.fail()
	}
	return n, err
}

func (w *lent) Read(b []byte) (int, error) {
	n, err := w.Conn.Read(b)
	if err != nil {
		w.fail()
	}
	return n, err
}

func (w *lent) fail() {
	w.mu.Lock()
	w.lost = true
	w.mu.Unlock()
}

// note records command name (lower case) with its first two arguments
// (the first in lower case). The client's handshake, its first commands,
// says again what the pool's connections were opened with (HELLO first,
// SELECT of their database, CLIENT SETNAME of their name, CLIENT SETINFO)
// and leaves nothing behind; the first command that is not of it ends it.
// Called with w.mu held.
func (w *lent) note(name, arg, arg2 string) {
	in := &w.f.p.inner
	w.cmds++
	if w.shake {
		switch {
		case name == "hello" && w.cmds == 1,
			name == "select" && arg == strconv.Itoa(in.DB),
			name == "client" && arg == "setname" && arg2 == in.ClientName,
			name == "client" && arg == "setinfo":
			return
		}
		w.shake = false
	}
	switch name {
	case "watch", "multi":
		w.watch = true
		return
	case "unwatch", "exec", "discard":
		w.watch = false
		return
	case "select":
		if arg == strconv.Itoa(in.DB) {
			return // the database the pool's connections are in
		}
	}
	if sessionName(name, arg) {
		w.dirty = true
	}
}

// Close ends the loan, once.
func (w *lent) Close() error {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return nil
	}
	w.done = true
	unfit := w.dirty || w.watch || w.lost || !w.scan.idle() || w.f.closed()
	w.mu.Unlock()
	// The borrower's deadlines must not outlive its loan.
	if err := w.Conn.SetDeadline(time.Time{}); err != nil {
		unfit = true
	}
	if unfit {
		w.l.Value().broken.Store(true) // end destroys it, or resets
	}
	w.l.Value().end(w.l)
	return nil
}

// reqScanner follows a stream of Redis requests, each an array of bulk
// strings (*N\r\n then N times $len\r\n<len bytes>\r\n), and reports each
// command's first three elements. It holds no more than one header line
// and the first 32 bytes of those three elements.
type reqScanner struct {
	line    []byte // a header line being read
	left    int    // elements left in the current request
	elem    int    // index of the current element
	skip    int    // bytes of the current bulk string (and its CRLF) still to come
	name    []byte // the command's first element
	arg     []byte // its second
	arg2    []byte // its third
	pending bool   // a request has started and not been reported
}

// idle reports whether the scanner stands between two requests.
func (s *reqScanner) idle() bool { return !s.pending && s.skip == 0 && len(s.line) == 0 }

// feed reads b and calls note for every request it completes. It reports
// false when the stream is not what it expects, and stops then.
func (s *reqScanner) feed(b []byte, note func(name, arg, arg2 string)) bool {
	for len(b) > 0 {
		if s.skip > 0 {
			n := min(s.skip, len(b))
			// Keep the start of the first three elements (without CRLF).
			if s.elem < 3 && s.skip > 2 {
				keep := min(n, s.skip-2)
				switch s.elem {
				case 0:
					s.name = appendCapped(s.name, b[:keep])
				case 1:
					s.arg = appendCapped(s.arg, b[:keep])
				case 2:
					s.arg2 = appendCapped(s.arg2, b[:keep])
				}
			}
			s.skip -= n
			b = b[n:]
			if s.skip == 0 {
				s.elem++
				s.left--
				if s.left == 0 {
					s.report(note)
				}
			}
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(s.line)+len(b) > 64 {
				return false
			}
			s.line = append(s.line, b...)
			return true
		}
		s.line = append(s.line, b[:i+1]...)
		b = b[i+1:]
		line := s.line
		s.line = s.line[:0]
		if len(line) < 3 || line[len(line)-2] != '\r' {
			return false
		}
		n, err := strconv.Atoi(string(line[1 : len(line)-2]))
		if err != nil || n < 0 {
			return false
		}
		switch line[0] {
		case '*':
			if s.left != 0 {
				return false
			}
			s.left, s.elem, s.pending = n, 0, true
			s.name, s.arg, s.arg2 = s.name[:0], s.arg[:0], s.arg2[:0]
			if n == 0 {
				s.pending = false
			}
		case '$':
			if s.left == 0 {
				return false
			}
			s.skip = n + 2
		default:
			return false
		}
	}
	return true
}

func (s *reqScanner) report(note func(name, arg, arg2 string)) {
	s.pending = false
	note(strings.ToLower(string(s.name)), strings.ToLower(string(s.arg)), string(s.arg2))
}

func appendCapped(dst, b []byte) []byte {
	if room := 32 - len(dst); room > 0 {
		dst = append(dst, b[:min(room, len(b))]...)
	}
	return dst
}
