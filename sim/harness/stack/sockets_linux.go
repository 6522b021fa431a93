package stack

// sideStates counts one side's sockets of a hop by TCP state.
type sideStates [12]int

// hopSockets is one reading of a hop: the connecting side's and the
// accepting side's sockets by state, and the ephemeral ports of the
// sockets in TIME_WAIT on each side (which connection they belonged to).
type hopSockets struct {
	client, server     sideStates
	clientTW, serverTW map[uint16]bool
}

// readHops reads the sockets of every hop whose state is in the mask. The
// listening sockets are left out.
func readHops(hops []Hop, states uint32, withTW bool) ([]hopSockets, error) {
	out := make([]hopSockets, len(hops))
	if withTW {
		for i := range out {
			out[i].clientTW, out[i].serverTW = map[uint16]bool{}, map[uint16]bool{}
		}
	}
	byPort := map[uint16]int{}
	for i, h := range hops {
		byPort[uint16(h.Port)] = i
	}
	err := dumpSockets(states, func(s diagSock) {
		if s.state == stListen || int(s.state) >= len(sideStates{}) {
			return
		}
		if i, ok := byPort[s.rport]; ok {
			out[i].client[s.state]++
			if withTW && s.state == stTimeWait {
				out[i].clientTW[s.lport] = true
			}
			return
		}
		if i, ok := byPort[s.lport]; ok {
			out[i].server[s.state]++
			if withTW && s.state == stTimeWait {
				out[i].serverTW[s.rport] = true
			}
		}
	})
	return out, err
}

// closing reports the sockets half way through a close.
func (s *sideStates) closing() int {
	return s[stFinWait1] + s[stFinWait2] + s[stCloseWait] + s[stLastAck] + s[stClosing]
}
