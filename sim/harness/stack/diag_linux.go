package stack

import (
	"encoding/binary"
	"fmt"
	"syscall"
)

// TCP states as the kernel numbers them (include/net/tcp_states.h).
const (
	stEstablished = 1
	stSynSent     = 2
	stSynRecv     = 3
	stFinWait1    = 4
	stFinWait2    = 5
	stTimeWait    = 6
	stClose       = 7
	stCloseWait   = 8
	stLastAck     = 9
	stListen      = 10
	stClosing     = 11
)

var stateNames = [...]string{"", "established", "syn_sent", "syn_recv", "fin_wait1", "fin_wait2",
	"time_wait", "close", "close_wait", "last_ack", "listen", "closing"}

// A diagSock is one TCP socket of this network namespace, as sock_diag
// reports it: its state and its local and remote ports (every socket of a
// run is on 127.0.0.1).
type diagSock struct {
	state  uint8
	lport  uint16
	rport  uint16
	laddr  [4]byte
	raddr  [4]byte
	family uint8
	inode  uint32
}

// allStates asks sock_diag for every state but LISTEN.
const allStates = 0xfff &^ (1 << stListen)

// dumpSockets lists the IPv4 and IPv6 TCP sockets of this network
// namespace whose state is in the mask (bit 1<<state), through the
// NETLINK_SOCK_DIAG socket that ss uses: the kernel filters the states,
// so a dump of the few open connections does not walk through tens of
// thousands of TIME_WAIT lines as reading /proc/net/tcp would.
func dumpSockets(states uint32, fn func(diagSock)) error {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_INET_DIAG)
	if err != nil {
		return fmt.Errorf("stack: sock_diag socket: %w", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return fmt.Errorf("stack: sock_diag bind: %w", err)
	}
	buf := make([]byte, 64<<10)
	for seq, family := range []uint8{syscall.AF_INET, syscall.AF_INET6} {
		// struct nlmsghdr (16 bytes) + struct inet_diag_req_v2 (56 bytes).
		req := make([]byte, 16+56)
		binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
		binary.NativeEndian.PutUint16(req[4:], sockDiagByFamily)
		binary.NativeEndian.PutUint16(req[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_DUMP)
		binary.NativeEndian.PutUint32(req[8:], uint32(seq+1))
		req[16] = family
		req[17] = syscall.IPPROTO_TCP
		binary.NativeEndian.PutUint32(req[20:], states)
		if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
			return fmt.Errorf("stack: sock_diag request: %w", err)
		}
	recv:
		for {
			n, _, err := syscall.Recvfrom(fd, buf, 0)
			if err != nil {
				if err == syscall.EINTR {
					continue
				}
				return fmt.Errorf("stack: sock_diag reply: %w", err)
			}
			msgs, err := syscall.ParseNetlinkMessage(buf[:n])
			if err != nil {
				return fmt.Errorf("stack: sock_diag reply: %w", err)
			}
			for _, m := range msgs {
				switch m.Header.Type {
				case syscall.NLMSG_DONE:
					break recv
				case syscall.NLMSG_ERROR:
					if len(m.Data) >= 4 {
						if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
							return fmt.Errorf("stack: sock_diag: %w", syscall.Errno(-e))
						}
					}
					break recv
				}
				if s, ok := parseDiagMsg(m.Data); ok {
					fn(s)
				}
			}
		}
	}
	return nil
}

// sockDiagByFamily is SOCK_DIAG_BY_FAMILY (linux/sock_diag.h).
const sockDiagByFamily = 20

// parseDiagMsg reads a struct inet_diag_msg: family, state, timer,
// retrans, then struct inet_diag_sockid (ports big-endian, addresses).
func parseDiagMsg(b []byte) (diagSock, bool) {
	const size = 72 // 4 bytes, inet_diag_sockid (48), five 32-bit fields
	if len(b) < size {
		return diagSock{}, false
	}
	s := diagSock{family: b[0], state: b[1], inode: binary.NativeEndian.Uint32(b[68:])}
	s.lport = binary.BigEndian.Uint16(b[4:])
	s.rport = binary.BigEndian.Uint16(b[6:])
	if s.family == syscall.AF_INET {
		copy(s.laddr[:], b[8:12])
		copy(s.raddr[:], b[24:28])
	} else {
		// An IPv4-mapped or ::1 address: keep its last four bytes.
		copy(s.laddr[:], b[20:24])
		copy(s.raddr[:], b[36:40])
	}
	return s, true
}
