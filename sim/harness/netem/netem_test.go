package netem

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connlab/connlab/sim/harness/kernel"
)

func TestCheckLoopback(t *testing.T) {
	for _, a := range []string{"127.0.0.1:80", "127.1.2.3:0", "[::1]:443", "127.0.0.1", "::ffff:127.0.0.1"} {
		if err := CheckLoopback(a); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
	for _, a := range []string{"10.0.0.1:80", "0.0.0.0:0", "[::]:80", "192.0.2.1:443", "localhost:80", "example.com:443", ":80", "[fe80::1%lo]:80", ""} {
		if err := CheckLoopback(a); err == nil || !strings.Contains(err.Error(), "only loopback") {
			t.Errorf("%q: want a refusal, got %v", a, err)
		}
	}
}

// TestDialerLoopbackOnly: the harness's dialer refuses another address.
func TestDialerLoopbackOnly(t *testing.T) {
	ctx := context.Background()
	if _, err := (Dialer{}).DialContext(ctx, "tcp", "192.0.2.1:443"); err == nil || !strings.Contains(err.Error(), "only loopback") {
		t.Errorf("dialer: %v", err)
	}
	if _, _, err := (Dialer{}).DialGated(ctx, "tcp", "192.0.2.1:443"); err == nil || !strings.Contains(err.Error(), "only loopback") {
		t.Errorf("gated dialer: %v", err)
	}
	if _, err := Listen("tcp", "0.0.0.0:0"); err == nil {
		t.Error("listened on 0.0.0.0")
	}
}

// TestPathRTT checks the emulated path: a ping-pong takes one RTT, bytes
// arrive in order, and a close arrives half a round trip after it is made.
func TestPathRTT(t *testing.T) {
	const rtt = 10 * time.Millisecond
	ln, err := Listen("tcp", "")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvDone := make(chan struct{})
	go func() {
		defer close(srvDone)
		raw, err := ln.Accept()
		if err != nil {
			return
		}
		c := Path{In: rtt / 2, Out: rtt / 2}.Wrap(raw)
		b := make([]byte, 64)
		for {
			n, err := c.Read(b)
			if err != nil {
				break
			}
			if string(b[:n]) == "close" {
				break
			}
			c.Write(b[:n])
		}
		c.Close()
		<-c.(*Conn).Done()
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := make([]byte, 64)
	// A round is 40 pings. On a busy machine one round's median can miss
	// the limit by a little: a round that misses is logged with the time
	// this process's threads waited for a CPU in it, and the next round
	// decides, three at most.
	for round := 1; ; round++ {
		before, _ := kernel.ReadUsage()
		var errs []time.Duration
		for i := range 40 {
			msg := fmt.Sprintf("ping %02d", i)
			st := time.Now()
			c.Write([]byte(msg))
			n, err := io.ReadFull(c, b[:len(msg)])
			if err != nil || string(b[:n]) != msg {
				t.Fatalf("echo %q: %q %v", msg, b[:n], err)
			}
			errs = append(errs, time.Since(st)-rtt)
		}
		after, _ := kernel.ReadUsage()
		slices.Sort(errs)
		med := errs[len(errs)/2]
		wait := "not known"
		if u := after.Sub(before); u.HasRunDelay {
			wait = u.RunDelay.String()
		}
		t.Logf("round %d: round trip error median %v, p90 %v; threads waited %s for a CPU", round, med, errs[len(errs)*9/10], wait)
		if med >= -50*time.Microsecond && med <= 300*time.Microsecond {
			break
		}
		if round == 3 {
			t.Errorf("median round trip %v off %v (want within 0.3 ms) in 3 rounds of 40", med, rtt)
			break
		}
	}
	st := time.Now()
	c.Write([]byte("close"))
	if n, err := c.Read(b); n != 0 || err != io.EOF {
		t.Fatalf("after close: %d %v", n, err)
	}
	if d := time.Since(st); d < rtt-time.Millisecond {
		t.Errorf("FIN came back after %v, before one RTT", d)
	}
	<-srvDone
}
