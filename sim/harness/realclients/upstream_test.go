package realclients

import (
	"fmt"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/pki"
	"github.com/connlab/connlab/sim/harness/servers"
)

// upstream starts the project's HTTPS upstream (TLS 1.3, session tickets,
// nginx's keep-alive: 75 s, 1000 requests; the client closes first) on
// 127.0.0.1 for clients the harness does not own, with rtt and server time
// as given, and stops it when the test ends. It returns the URL (the
// certificate names 127.0.0.1, so no lookup is made), the CA, and the
// upstream, whose Stats count connections server-side.
func upstream(t *testing.T, rtt, serverTime time.Duration) (string, []byte, *servers.Upstream) {
	t.Helper()
	certs, err := pki.Shared()
	if err != nil {
		t.Fatal(err)
	}
	s := sim.Default()
	s.RTT, s.ServerTime = rtt, serverTime
	up, err := servers.StartUpstream("127.0.0.1:0", servers.ConfigFor(&s, rtt, servers.ForeignDialers), certs, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(up.Close)
	return fmt.Sprintf("https://127.0.0.1:%d/", up.Port()), certs.CAPEM, up
}
