package harness

import (
	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/pki"
	"github.com/connlab/connlab/sim/harness/servers"
)

// APIHost is the name the lab's clients call; the harness's DNS server
// answers it with 127.0.0.1 and the certificates name it.
const APIHost = pki.APIHost

// Servers are an upstream and a DNS server started for clients the harness
// does not own (sim upstream).
type Servers = servers.Servers

// StartServers starts the upstream on addr and the DNS server on dnsAddr
// (both loopback, "" or port 0 for a port the kernel picks) for scenario s.
func StartServers(addr, dnsAddr string, s sim.Scenario) (*Servers, error) {
	return servers.StartServers(addr, dnsAddr, s)
}
