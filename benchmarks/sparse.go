package benchmarks

import (
	"encoding/binary"
	"fmt"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// The bufferbloat suite's sparse flows and fairness figures: besides the
// TCP request/response probe, a ping-like UDP echo every PingInterval (a flow
// that pkt.Hash does not mark: only the packet's headers tell it apart),
// and each bulk stream's goodput, for Jain's fairness index.

const udpProbePort = 5003

// udpProbeTimeout is how long an echo may take before it counts as lost.
const udpProbeTimeout = time.Second

// startUDPProbe starts the UDP echo server on B and the prober on A, which
// sends a 64-byte datagram every o.PingInterval and waits for its echo.
func (h *harness) startUDPProbe() error {
	srv, err := gonet.DialUDP(h.sb, &tcpip.FullAddress{NIC: nicID, Addr: addrB, Port: udpProbePort}, nil, ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("udp probe server: %v", err)
	}
	h.track(srv)
	cli, err := gonet.DialUDP(h.sa, nil, &tcpip.FullAddress{NIC: nicID, Addr: addrB, Port: udpProbePort}, ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("udp probe: %v", err)
	}
	h.track(cli)
	h.wg.Add(2)
	go func() {
		defer h.wg.Done()
		buf := make([]byte, probeSize)
		for {
			n, from, err := srv.ReadFrom(buf)
			if err != nil {
				return
			}
			if _, err := srv.WriteTo(buf[:n], from); err != nil {
				return
			}
		}
	}()
	go func() {
		defer h.wg.Done()
		buf := make([]byte, probeSize)
		for seq := uint64(1); !h.stopping.Load(); seq++ {
			binary.BigEndian.PutUint64(buf, seq)
			t0 := time.Now()
			if _, err := cli.Write(buf); err != nil {
				return
			}
			var rtt time.Duration // 0: lost
			for deadline := t0.Add(udpProbeTimeout); ; {
				cli.SetReadDeadline(deadline)
				if _, err := cli.Read(buf); err != nil {
					break // lost, or the run is over
				}
				if binary.BigEndian.Uint64(buf) == seq {
					rtt = time.Since(t0)
					h.urt.add(t0, rtt)
					break
				}
			}
			h.udpSent.add(t0, rtt)
			time.Sleep(h.o.PingInterval)
		}
	}()
	return nil
}

// Jain is Jain's fairness index of the streams' goodputs: 1 when all are
// equal, 1/n when one takes everything (0 without streams).
func Jain(x []float64) float64 {
	var sum, sq float64
	for _, v := range x {
		sum += v
		sq += v * v
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(x)) * sq)
}

// startSparse starts the UDP probe when the run asks for sparse flows.
func (h *harness) startSparse() error {
	if !h.o.Sparse {
		return nil
	}
	return h.startUDPProbe()
}
