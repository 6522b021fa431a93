package class

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Every address of 127.0.0.0/8 and ::1 is this one machine: 300 joins from
// as many loopback addresses stop at PerAddress, and the class still has
// room for a student from the room's network.
func TestLoopbackIsOneMachine(t *testing.T) {
	const per = 4
	_, hs, _, _ := lanClass(t, Options{Limits: Limits{PerAddress: per, ConnsPerAddress: 1000}})
	joined := 0
	for i := range 300 {
		addr := from(fmt.Sprintf("127.%d.%d.%d", i/250, i%250, 1+i%7))
		switch i {
		case 298:
			addr = from("::1")
		case 299:
			addr = from("::ffff:127.0.0.9")
		}
		m := joinFrom(t, hs, addr, map[string]any{"name": fmt.Sprintf("s%d", i), "code": testCode})
		switch {
		case m["type"] == "joined":
			joined++
		case !strings.Contains(text(m), "from your address"):
			t.Fatalf("join %d from %s: %v", i, addr, m)
		}
	}
	if joined != per {
		t.Errorf("%d students joined from loopback addresses, want %d (PerAddress)", joined, per)
	}
	if m := joinFrom(t, hs, from("192.168.1.30"), map[string]any{"name": "lan", "code": testCode}); m["type"] != "joined" {
		t.Errorf("a student from the room's network: %v", m)
	}
}

// ConnsPerAddress counts the connections of every loopback address as one
// machine's; an address of the room's network has its own.
func TestLoopbackConns(t *testing.T) {
	_, hs, _, _ := lanClass(t, Options{Limits: Limits{ConnsPerAddress: 3}})
	for _, a := range []string{"127.0.0.2", "127.200.0.1", "::1"} {
		c, _, err := websocket.DefaultDialer.Dial(wsURL(hs, ""), http.Header{testAddr: {from(a)}})
		if err != nil {
			t.Fatalf("a connection from %s within the limit: %v", a, err)
		}
		defer c.Close()
	}
	_, resp, err := websocket.DefaultDialer.Dial(wsURL(hs, ""), http.Header{testAddr: {from("127.9.9.9")}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a fourth connection from loopback: %v %v", err, resp)
	}
	c, _, err := websocket.DefaultDialer.Dial(wsURL(hs, ""), http.Header{testAddr: {from("192.168.1.9")}})
	if err != nil {
		t.Errorf("a connection from the room's network: %v", err)
	} else {
		c.Close()
	}
}

// Wrong codes from many addresses of the room's network count for the
// class too: past WrongCodesClass (60) in a minute, every code check from
// an address without a student says "blocked", even for the right code
// (else the limit would tell a guesser which code is right), for that
// minute. Students who joined keep their seats, and their machines may
// still check codes.
func TestClassWideWrongCodes(t *testing.T) {
	const limit = 60
	_, hs, mux, clock := lanClass(t, Options{})
	ann := joinFrom(t, hs, from("10.0.9.1"), map[string]any{"name": "Ann", "code": testCode})
	if ann["type"] != "joined" {
		t.Fatal(ann)
	}
	for i := range 200 {
		st, _ := landing(t, mux, from(fmt.Sprintf("10.0.%d.%d", 1+i/200, 2+i%200)), fmt.Sprintf("?code=GUESS%03d", i), "")
		if i < limit && st != "wrong" || i >= limit && st != "blocked" {
			t.Fatalf("wrong code %d, from an address of its own: %q", i+1, st)
		}
	}
	// A right code from a fresh address waits too, on the landing page and
	// in a join, with a word on why.
	req := httptest.NewRequest("GET", "/class/?code="+testCode, nil)
	req.RemoteAddr = from("10.0.5.5")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	if st := landingState(t, rec.Body.String()); st != "blocked" {
		t.Errorf("the right code from a fresh address: %q", st)
	}
	if body := rec.Body.String(); !strings.Contains(body, "This class has seen too many wrong codes") {
		t.Errorf("the blocked page does not say that the class saw too many wrong codes: %s", body)
	}
	if m := joinFrom(t, hs, from("10.0.5.7"), map[string]any{"name": "Bob", "code": testCode}); m["type"] != "error" ||
		!strings.Contains(text(m), "the class has seen too many wrong join codes") || !strings.Contains(text(m), "wait a minute") {
		t.Errorf("a join with the right code while the class is blocked: %v", m)
	}
	// Ann keeps her seat, and her machine may still add a student.
	if m := joinFrom(t, hs, from("10.0.9.1"), map[string]any{"token": ann["token"]}); m["type"] != "joined" {
		t.Errorf("Ann rejoining: %v", m)
	}
	if m := joinFrom(t, hs, from("10.0.9.1"), map[string]any{"name": "Ann's neighbour", "code": testCode}); m["type"] != "joined" {
		t.Errorf("a second student from Ann's machine: %v", m)
	}
	// A minute later the class lets new students in again.
	clock.Add(61 * time.Second)
	if st, _ := landing(t, mux, from("10.0.5.5"), "?code="+testCode, ""); st != "ok" {
		t.Errorf("the right code a minute later: %q", st)
	}
	if m := joinFrom(t, hs, from("10.0.5.7"), map[string]any{"name": "Bob", "code": testCode}); m["type"] != "joined" {
		t.Errorf("Bob a minute later: %v", m)
	}
}

// The teacher's state counts the class's wrong codes of the last minute.
func TestTeacherSeesWrongCodes(t *testing.T) {
	_, hs, mux, clock := lanClass(t, Options{})
	teacher, _, err := websocket.DefaultDialer.Dial(wsURL(hs, "?teacher=teacher-secret"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer teacher.Close()
	if st := read(t, teacher, "state"); st["wrong_codes"] != 0.0 || st["wrong_codes_limit"] != 60.0 {
		t.Fatalf("a new class: wrong_codes %v of %v", st["wrong_codes"], st["wrong_codes_limit"])
	}
	for i := range 3 {
		landing(t, mux, from(fmt.Sprintf("172.16.0.%d", i+1)), "?code=NOPE", "")
	}
	for read(t, teacher, "state")["wrong_codes"] != 3.0 {
	}
	clock.Add(2 * time.Minute)
	landing(t, mux, from("172.16.0.9"), "?code=NOPE", "")
	for read(t, teacher, "state")["wrong_codes"] != 1.0 {
	}
}

// An IPv6 address counts by its /64 (one device may hold many addresses of
// its /64, privacy extensions), unless that /64 is the one the server was
// reached on: the client is then on the server's own link, where every
// device of the room shares the /64, and its exact address counts, as an
// IPv4 address does.
func TestIPv6Prefix(t *testing.T) {
	_, _, mux, _ := lanClass(t, Options{Limits: Limits{WrongCodes: 3}})
	for _, a := range []string{"2001:db8:1:2::a", "2001:db8:1:2::b", "2001:db8:1:2:1:2:3:4"} {
		if st, _ := landing(t, mux, from(a), "?code=NOPE", ""); st != "wrong" {
			t.Errorf("a wrong code from %s: %q", a, st)
		}
	}
	if st, _ := landing(t, mux, from("2001:db8:1:2::f"), "?code="+testCode, ""); st != "blocked" {
		t.Errorf("another address of the /64 after 3 wrong codes: %q", st)
	}
	if st, _ := landing(t, mux, from("2001:db8:1:3::a"), "?code="+testCode, ""); st != "ok" {
		t.Errorf("an address of another /64: %q", st)
	}
	// On the server's link: the room's devices, one key each.
	onLink := func(remote, query string) string {
		req := httptest.NewRequest("GET", "/class/"+query, nil)
		req.RemoteAddr = from(remote)
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey,
			&net.TCPAddr{IP: net.ParseIP("2001:db8:5:6::1"), Port: 8080}))
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return landingState(t, rec.Body.String())
	}
	for _, a := range []string{"2001:db8:5:6::a", "2001:db8:5:6::b", "2001:db8:5:6::c"} {
		onLink(a, "?code=NOPE")
	}
	if st := onLink("2001:db8:5:6::d", "?code="+testCode); st != "ok" {
		t.Errorf("a device on the server's link after 3 wrong codes from its neighbours: %q", st)
	}
	for range 2 {
		onLink("2001:db8:5:6::a", "?code=NOPE")
	}
	if st := onLink("2001:db8:5:6::a", "?code="+testCode); st != "blocked" {
		t.Errorf("a device on the server's link after its own 3 wrong codes: %q", st)
	}
}

// addrKey's cases, one per rule.
func TestAddrKey(t *testing.T) {
	for _, tc := range []struct{ remote, local, want string }{
		{"2001:db8:1:2::a", "", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "192.168.1.1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::a", "2001:db8:9:9::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::a", "2001:db8:1:2::1", "2001:db8:1:2::a"},
		{"fe80::1234%eth0", "fe80::1%eth0", "fe80::1234"},
		{"fe80::1234%eth0", "", "fe80::/64"},
		{"::ffff:192.168.1.7", "", "192.168.1.7"},
		{"192.168.1.7", "", "192.168.1.7"},
		{"127.3.4.5", "", "loopback"},
		{"::1", "", "loopback"},
		{"::ffff:127.0.0.1", "", "loopback"},
	} {
		req := httptest.NewRequest("GET", "/class/", nil)
		req.RemoteAddr = from(tc.remote)
		if tc.local != "" {
			ip, zone, _ := strings.Cut(tc.local, "%")
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP(ip), Zone: zone, Port: 8080}))
		}
		if got := addrKey(req); got != tc.want {
			t.Errorf("addrKey(%s, local %q) = %q, want %q", tc.remote, tc.local, got, tc.want)
		}
	}
	req := httptest.NewRequest("GET", "/class/", nil)
	req.RemoteAddr = "pipe"
	if got := addrKey(req); got != "pipe" {
		t.Errorf("addrKey of a RemoteAddr that is no address: %q", got)
	}
	if l := (Limits{}).withDefaults(); l.WrongCodesClass != 60 || l.WrongCodesClass != 6*l.WrongCodes {
		t.Errorf("WrongCodesClass defaults to %d (WrongCodes %d)", l.WrongCodesClass, l.WrongCodes)
	}
}

// Machines that guessed once and never came back are forgotten: a day of
// guessers from fresh addresses does not grow the class's memory.
func TestGuessersForgotten(t *testing.T) {
	cs, _, mux, clock := lanClass(t, Options{Limits: Limits{MaxStudents: 5}})
	bound := 2 * (cs.lim.MaxConns + cs.lim.MaxStudents + cs.lim.WrongCodesClass)
	for minute := range 30 {
		for i := range cs.lim.WrongCodesClass {
			landing(t, mux, from(fmt.Sprintf("10.%d.%d.%d", 1+minute/250, minute%250, 1+i)), "?code=NOPE", "")
		}
		clock.Add(time.Minute)
	}
	cs.mu.Lock()
	n := len(cs.addrs)
	cs.mu.Unlock()
	if n > bound+1 {
		t.Errorf("%d machines remembered after 30 minutes of guessers, want at most %d", n, bound+1)
	}
}
