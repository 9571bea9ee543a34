package tbf_test

import (
	"fmt"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// Shape a NIC's egress to 10 Mbit/s with a 12500-byte bucket and at most
// 50 ms of queueing, as `tc qdisc add dev eth0 root tbf rate 10mbit burst
// 12500 latency 50ms` does for a host.
func Example() {
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
	})
	defer s.Destroy()
	link := channel.New(256, 1500, "")
	defer link.Close()

	q, err := tbf.New(link, s.Clock(), tbf.Config{
		Rate:    10_000_000 / 8, // bytes per second
		Burst:   12500,          // bytes
		Latency: 50 * time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := s.CreateNICWithOptions(1, link, stack.NICOptions{QDisc: q}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(q)
	fmt.Println(q.Stats())
	// Output:
	// tbf rate 10Mbit burst 12500b lat 50ms
	// Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
	//  backlog 0b 0p requeues 0
}
