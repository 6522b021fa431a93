package phpwasm

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// freshConnections is a lab-like script: the persistent share handle
// (with SSL_SESSION), three calls, each on a new connection that the
// client closes (no idle close by the server), and each call's body as a
// check (openssl s_server -www names the session New or Reused there).
const freshConnections = `<?php
$sh = curl_share_init_persistent([CURL_LOCK_DATA_DNS, CURL_LOCK_DATA_CONNECT, CURL_LOCK_DATA_SSL_SESSION]);
for ($i = 0; $i < 3; $i++) {
    $ch = curl_init(API_URL);
    curl_setopt($ch, CURLOPT_SHARE, $sh);
    curl_setopt_array($ch, API_OPTIONS);
    curl_setopt_array($ch, [CURLOPT_FRESH_CONNECT => true, CURLOPT_FORBID_REUSE => true]);
    $b = (string) curl_exec($ch);
    check("session$i", fn () => preg_match('/^(New|Reused), TLS/m', $b, $m) ? $m[1] : '');
    report($ch);
}
`

// TestTLS12ResumptionNeedsSessionIDs: PHP 8.5's libcurl (7.69.1, OpenSSL
// 1.1.1) asks for no session ticket (its ClientHello has no session_ticket
// extension: curl's lib/vtls/openssl.c sets SSL_OP_NO_TICKET), so it
// resumes a TLS 1.2 session only where the server keeps session IDs:
// never with Go's crypto/tls (the harness's upstream), which keeps none,
// even with the client closing each connection; always with openssl
// s_server. TLS 1.3 resumes with Go: its tickets need no such extension.
// This is why the idle block's real runs make a full TLS 1.2 handshake
// after the pause (the page teaches it; roles.curlTimers).
func TestTLS12ResumptionNeedsSessionIDs(t *testing.T) {
	c := newCerts(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "fresh.php")
	if err := os.WriteFile(script, []byte(freshConnections), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		ver  uint16
		want []bool
	}{{tls.VersionTLS12, []bool{false, false, false}}, {tls.VersionTLS13, []bool{false, true, true}}} {
		up, hellos := startHelloUpstream(t, c, v.ver)
		p := startDriver(t, c, up, opts{script: script, scenario: scenario("process", 1)})
		calls := p.serve(1)
		p.exit()
		if !slices.Equal(connects(calls), []int{1, 1, 1}) {
			t.Fatalf("TLS %x: num_connects %v, want a new connection for each call", v.ver, connects(calls))
		}
		hs := hellos()
		var resumed []bool
		for _, h := range hs {
			resumed = append(resumed, h.resumed)
			if h.ticketExt {
				t.Errorf("TLS %x: libcurl's ClientHello carries the session_ticket extension (35): it asks for TLS 1.2 tickets now", v.ver)
			}
		}
		if !slices.Equal(resumed, v.want) {
			t.Errorf("TLS %x with Go's crypto/tls: resumed %v, want %v", v.ver, resumed, v.want)
		}
	}

	// A server that keeps session IDs and issues no tickets.
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("no openssl command for the session-ID server:", err)
	}
	key := filepath.Join(dir, "leaf.pem")
	if err := os.WriteFile(key, c.leafPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := exec.Command(openssl, "s_server", "-accept", addr, "-cert", key, "-key", key, "-tls1_2", "-no_ticket", "-www", "-quiet")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("openssl s_server did not listen on %s: %v", addr, err)
		}
	}
	p := startDriver(t, c, &upstream{addr: addr}, opts{script: script, scenario: scenario("process", 1)})
	p.serve(1)
	p.exit()
	var got []string
	for _, ch := range p.checks {
		got = append(got, fmt.Sprint(ch.Result))
	}
	if want := []string{"New", "Reused", "Reused"}; !slices.Equal(got, want) {
		t.Errorf("TLS 1.2 with openssl s_server's session IDs: %v, want %v (checks %+v)", got, want, p.checks)
	}
}

// helloUpstream is what startHelloUpstream's server saw of one connection.
type helloUpstream struct {
	ticketExt bool // the ClientHello has the session_ticket extension
	resumed   bool
}

// startHelloUpstream is an HTTPS server of one TLS version, tickets on (Go's
// default), that records each connection's ClientHello and resumption.
func startHelloUpstream(t *testing.T, c *certs, ver uint16) (*upstream, func() []helloUpstream) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var hs []helloUpstream
	cfg := &tls.Config{Certificates: []tls.Certificate{c.leaf}, MinVersion: ver, MaxVersion: ver,
		GetConfigForClient: func(ch *tls.ClientHelloInfo) (*tls.Config, error) {
			mu.Lock()
			hs = append(hs, helloUpstream{ticketExt: slices.Contains(ch.Extensions, 35)})
			mu.Unlock()
			return nil, nil
		}}
	body := strings.Repeat("x", 900)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hs[len(hs)-1].resumed = r.TLS.DidResume // calls are one at a time
		mu.Unlock()
		io.WriteString(w, body)
	}), TLSConfig: cfg}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return &upstream{addr: ln.Addr().String()}, func() []helloUpstream {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(hs)
	}
}
