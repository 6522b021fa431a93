package netem

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestWaitsLeaveTheNetpoller: a burst of waits falling due together must
// not keep socket reads from being heard. Waits that spun yielding kept
// Go's run queue full, and the scheduler polled the network only when
// sysmon did, up to 10 ms later: then most echoes of a burst wait until
// it ends, and their median is several milliseconds. It is the median
// that is asserted; the slowest of the bursts' echoes is only logged,
// because on a shared machine one of them may meet a descheduled thread.
func TestWaitsLeaveTheNetpoller(t *testing.T) {
	ln, err := Listen("tcp", "")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			c.Write(buf)
		}
	}()
	c, err := Dial(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// On a quiet machine the median is about 0.1 ms; two busy loops beside
	// the test have made it 1 ms, and busier machines more: the bound
	// decides only on a quiet machine, and on a busy one the bursts are
	// tried again (decide).
	decide(t, 1, 3, func() string {
		var echoes []time.Duration
		for range 20 {
			// 200 waits over 10 ms, as the emulated paths of 25 new
			// connections on a slow machine.
			start := time.Now()
			var wg sync.WaitGroup
			for i := range 200 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					preciseWait(start.Add(time.Duration(i) * 50 * time.Microsecond))
				}()
			}
			time.Sleep(time.Millisecond)
			// An echo on loopback, in the middle of the burst.
			t0 := time.Now()
			if _, err := c.Write([]byte{1}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Read(make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
			echoes = append(echoes, time.Since(t0))
			wg.Wait()
		}
		slices.Sort(echoes)
		median := echoes[len(echoes)/2]
		t.Logf("loopback echoes during a burst of waits: median %s, slowest %s", median, echoes[len(echoes)-1])
		if median > 2*time.Millisecond {
			return fmt.Sprintf("the median loopback echo took %s during a burst of waits (all: %v): the waits keep the netpoller from running", median, echoes)
		}
		return ""
	})
}
