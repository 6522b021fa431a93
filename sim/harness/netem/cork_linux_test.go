package netem

import (
	"context"
	"io"
	"testing"
	"time"
)

// TestCorkForClose: after CorkForClose, a write through a client's path
// stays in the kernel until the close, then leaves with the FIN: the
// server reads the bytes and the end together, never the bytes alone
// first (the close_notify a server would answer by closing first).
func TestCorkForClose(t *testing.T) {
	ln, err := Listen("tcp", "")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	raw, _, err := Dialer{}.DialGated(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := Path{In: time.Millisecond}.Wrap(raw)
	if !CorkForClose(c) {
		t.Fatal("CorkForClose did not set TCP_CORK")
	}
	if _, err := c.Write([]byte("alert")); err != nil {
		t.Fatal(err)
	}
	srv.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := srv.Read(make([]byte, 16)); n > 0 || err == nil {
		t.Fatalf("the server read %d bytes before the close (%v): not held", n, err)
	}
	c.Close()
	srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(srv); string(b) != "alert" || err != nil {
		t.Errorf("after the close the server read %q, %v; want the bytes, then the end", b, err)
	}
}
