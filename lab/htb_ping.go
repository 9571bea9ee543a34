package lab

import "time"

// PingFrom pings the sandbox's or netstack's address (NetstackAddr) from
// the peer's address from, count times, interval apart, and returns the
// answered RTTs and how many were sent. The replies go to from, so an htb
// that places packets by destination sends them through from's class:
// PeerAddr's, or PeerClusterAddr's once AddClusterPeer has put it on the
// peer. It is one class's RTT, as Ping is the NIC's.
func (l *Lab) PingFrom(from string, count int, interval time.Duration) ([]time.Duration, int, error) {
	return pingFrom(l.NSP, from, NetstackAddr, count, interval)
}
