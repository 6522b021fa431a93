package sim

import (
	"testing"
	"time"
)

// fourCalls runs s, then s as set changes it, and returns the calls of
// each run: four, or the test fails.
func fourCalls(t *testing.T, s Scenario, set func(*Scenario)) (before, after []Event) {
	t.Helper()
	_, base := run(t, s)
	set(&s)
	_, changed := run(t, s)
	before, after = calls(base), calls(changed)
	if len(before) != 4 || len(after) != 4 {
		t.Fatalf("calls: %d and %d, want 4", len(before), len(after))
	}
	return before, after
}

// TestClientCPU: client_cpu delays every call's request, client_read_cpu
// its end after the first byte, on new connections and kept ones alike;
// connect_cpu delays a new connection's connect (and what follows it).
func TestClientCPU(t *testing.T) {
	s := Default()
	s.Requests, s.Reuse = 4, ReuseProcess
	const send, read, conn = 3 * time.Millisecond, 5 * time.Millisecond, 7 * time.Millisecond
	bc, sc := fourCalls(t, s, func(s *Scenario) { s.ClientCPU, s.ClientReadCPU, s.ConnectCPU = send, read, conn })
	for i := range bc {
		b, c := bc[i], sc[i]
		opening := time.Duration(0)
		if b.NewConn {
			opening = conn
		}
		if c.NewConn != b.NewConn || c.NameLookup != b.NameLookup {
			t.Errorf("call %d: %+v vs %+v", i+1, b, c)
		}
		for _, d := range []struct {
			name      string
			was, is   time.Duration
			want      time.Duration
			onNewOnly bool
		}{
			{"connect", b.Connect, c.Connect, opening, true},
			{"appconnect", b.AppConnect, c.AppConnect, opening, true},
			{"starttransfer", b.StartTransfer, c.StartTransfer, opening + send, false},
			{"total", b.Total, c.Total, opening + send + read, false},
		} {
			if d.onNewOnly && !b.NewConn {
				d.want = 0
			}
			if d.is-d.was != d.want {
				t.Errorf("call %d (new %v): %s %v→%v, want +%v", i+1, b.NewConn, d.name, d.was, d.is, d.want)
			}
		}
	}
}

// TestDropCPU: a call that finds its kept connection closed by the server
// (the pause outlasted keepalive_timeout) spends drop_cpu dropping it
// before its name lookup, so every phase of that call is later by it; the
// call before the pause, on no connection to drop, and the call after it,
// on the new one, are not.
func TestDropCPU(t *testing.T) {
	s := Default()
	s.Requests, s.Reuse = 4, ReuseProcess
	s.PauseEvery, s.Pause, s.KeepaliveTimeout = 2, 80*time.Second, 75*time.Second
	const drop = 3 * time.Millisecond
	bc, sc := fourCalls(t, s, func(s *Scenario) { s.DropCPU = drop })
	for i := range bc {
		b, c := bc[i], sc[i]
		want := time.Duration(0)
		if i == 2 {
			want = drop
			if !b.NewConn {
				t.Fatalf("call 3 reused a connection the server closed: %+v", b)
			}
		}
		for _, d := range []struct {
			name    string
			was, is time.Duration
		}{
			{"namelookup", b.NameLookup, c.NameLookup},
			{"connect", b.Connect, c.Connect},
			{"appconnect", b.AppConnect, c.AppConnect},
			{"starttransfer", b.StartTransfer, c.StartTransfer},
			{"total", b.Total, c.Total},
		} {
			if d.is-d.was != want {
				t.Errorf("call %d: %s %v→%v, want +%v", i+1, d.name, d.was, d.is, want)
			}
		}
	}
}

// TestCloseUnderWayAtEnd: a server's FIN still on its way to a pool's idle
// connection when the last answer arrives becomes a server TIME_WAIT half a
// round trip later; the peak counts it, as a real run's last reading waits
// for closes under way. The FIN of a client that notices only on its next
// use (reuse = process, as curl) leaves no TIME_WAIT.
func TestCloseUnderWayAtEnd(t *testing.T) {
	s := base()
	s.Reuse = "pool"
	s.TLS = TLSNone
	s.DNS = 0
	s.RTT = 100 * ms
	s.ServerTime = 0
	s.Load = LoadOpen
	s.Arrival = "uniform"
	s.Rate = 10 // requests at 0 and 100 ms, on two connections
	s.Requests = 2
	s.Threads = 0
	// The first connection's last answer leaves the server at 150 ms; idle
	// 110 ms, it is closed at 260 ms; its FIN would reach the client at
	// 310 ms, after the second call's answer at 300 ms.
	s.KeepaliveTimeout = 110 * ms
	res, evs := run(t, s)
	if res.Summary.Connects != 2 || count(evs, KindClose, "server", "idle-timeout") != 1 {
		t.Fatalf("want two connections and one idle-timeout close: %+v", res.Summary)
	}
	if count(evs, KindTimeWait, "server", "") != 0 || res.Summary.ServerTimeWaitPeak != 1 {
		t.Errorf("server TIME_WAIT: %d events, peak %d; want the close under way counted in the peak only", count(evs, KindTimeWait, "server", ""), res.Summary.ServerTimeWaitPeak)
	}
	s.Reuse = "process"
	if res, _ := run(t, s); res.Summary.ServerTimeWaitPeak != 0 {
		t.Errorf("reuse = process: server TIME_WAIT peak %d, want 0 (curl notices the FIN on its next use)", res.Summary.ServerTimeWaitPeak)
	}
}

// TestResumeCPU: resume_cpu prices a resumed handshake, in place of
// OpenSSL's ECDHE for TLS 1.3 and of nothing for TLS 1.2; full handshakes
// keep their price.
func TestResumeCPU(t *testing.T) {
	const given = 2 * time.Millisecond
	for _, c := range []struct {
		tls  TLSVersion
		dflt time.Duration
	}{{TLS13, 2 * ecdhP256}, {TLS12, 0}} {
		s := Default()
		// A share of the TLS session only: every call opens a connection,
		// and all but the first resume.
		s.Requests, s.Reuse, s.TLS, s.TLSResume = 3, ReuseProcess, c.tls, true
		s.ShareSets = [][]string{{"ssl_session"}}
		_, base := run(t, s)
		s.ResumeCPU = given
		_, priced := run(t, s)
		bc, pc := calls(base), calls(priced)
		if len(bc) != 3 || len(pc) != 3 {
			t.Fatalf("%s: calls %d and %d, want 3", c.tls, len(bc), len(pc))
		}
		resumed := 0
		for i := range bc {
			b, p := bc[i], pc[i]
			want := time.Duration(0)
			if b.Handshake == HandshakeResumed {
				want, resumed = given-c.dflt, resumed+1
			}
			if p.Handshake != b.Handshake || p.AppConnect-b.AppConnect != want {
				t.Errorf("%s call %d (%s): appconnect %v→%v, want +%v", c.tls, i+1, b.Handshake, b.AppConnect, p.AppConnect, want)
			}
		}
		if resumed != 2 {
			t.Errorf("%s: %d resumed handshakes of 3 new connections, want 2", c.tls, resumed)
		}
	}
}
