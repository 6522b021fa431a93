package servers

import (
	"errors"
	"net"
	"sync"

	"github.com/connlab/connlab/sim/harness/netem"
)

// connSet accepts a server's connections, puts each behind the server's end
// of the emulated path and serves it in a goroutine of its own; close ends
// them all.
type connSet struct {
	ln   net.Listener
	path netem.Path

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	n      int // connections accepted
	closed bool
	wg     sync.WaitGroup
}

// serveConns starts accepting on ln; serve gets each connection and its
// number, from 1 in the order of acceptance.
func serveConns(ln net.Listener, path netem.Path, serve func(c net.Conn, n int)) *connSet {
	s := &connSet{ln: ln, path: path, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept(serve)
	return s
}

func (s *connSet) accept(serve func(c net.Conn, n int)) {
	defer s.wg.Done()
	for {
		raw, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			raw.Close()
			return
		}
		s.n++
		n := s.n
		c := s.path.Wrap(raw)
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			serve(c, n)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// close stops accepting, closes every connection at once and waits until
// they and their emulated paths have ended.
func (s *connSet) close() {
	s.mu.Lock()
	s.closed = true
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.ln.Close()
	for _, c := range conns {
		if dc, ok := c.(*netem.Conn); ok {
			dc.Abort()
		} else {
			c.Close()
		}
	}
	s.wg.Wait()
	for _, c := range conns {
		if dc, ok := c.(*netem.Conn); ok {
			<-dc.Done()
		}
	}
}
