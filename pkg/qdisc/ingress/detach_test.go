package ingress_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/ingress"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// joiningLink is a child link that delivers from a goroutine of its own
// and joins it on Attach(nil), as fdbased does with its processors: a
// flood of ICMP echo requests, one for each credit the test gives (at
// most floodPackets), to whatever is attached. What the stack sends back
// is discarded.
type joiningLink struct {
	*qdisctest.Link
	mu sync.Mutex
	// stop is closed by Attach(nil); nil while detached.
	// +checklocks:mu
	stop chan struct{}
	// done is closed when the goroutine has returned.
	// +checklocks:mu
	done    chan struct{}
	sent    atomic.Int64
	credits chan struct{}
	// flooding says the goroutine runs.
	flooding atomic.Bool
}

const floodPackets = 20000

var (
	hostAddr = tcpip.AddrFrom4([4]byte{192, 0, 2, 1})
	peerAddr = tcpip.AddrFrom4([4]byte{192, 0, 2, 2})
)

// Attach starts the delivering goroutine, or with nil stops it and waits
// for it to return.
func (l *joiningLink) Attach(d stack.NetworkDispatcher) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d == nil {
		if l.stop != nil {
			close(l.stop)
			<-l.done // joined while the stack holds its lock
			l.stop = nil
		}
		return
	}
	if l.stop != nil {
		return
	}
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	l.flooding.Store(true)
	go l.flood(d, l.stop, l.done)
}

// IsAttached implements stack.LinkEndpoint.
func (l *joiningLink) IsAttached() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stop != nil
}

// flood delivers echo requests to d until stopped or floodPackets are sent.
func (l *joiningLink) flood(d stack.NetworkDispatcher, stop, done chan struct{}) {
	defer func() {
		l.flooding.Store(false)
		close(done)
	}()
	for i := 0; i < floodPackets; i++ {
		select {
		case <-stop:
			return
		case <-l.credits:
		}
		pkt := echoRequest(uint16(i))
		d.DeliverNetworkPacket(header.IPv4ProtocolNumber, pkt)
		pkt.DecRef()
		l.sent.Add(1)
	}
}

// echoRequest is an IPv4 ICMP echo request of 100 bytes from the peer.
func echoRequest(seq uint16) *stack.PacketBuffer {
	const size = 100
	b := make([]byte, size)
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{
		TotalLength: size,
		TTL:         64,
		Protocol:    uint8(header.ICMPv4ProtocolNumber),
		SrcAddr:     peerAddr,
		DstAddr:     hostAddr,
	})
	ip.SetChecksum(^ip.CalculateChecksum())
	icmp := header.ICMPv4(b[header.IPv4MinimumSize:])
	icmp.SetType(header.ICMPv4Echo)
	icmp.SetSequence(seq)
	icmp.SetChecksum(^checksum.Checksum(icmp, 0))
	return stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
}

// step gives the link 20 packets to deliver and lets 100 µs (10 packets'
// worth of the rate) pass once it has (or has stopped delivering).
func step(clock *faketime.ManualClock, l *joiningLink) {
	for k := 0; k < cap(l.credits); k++ {
		select {
		case l.credits <- struct{}{}:
		default:
		}
	}
	for k := 0; k < 1000 && len(l.credits) > 0 && l.flooding.Load(); k++ {
		runtime.Gosched()
	}
	clock.Advance(100 * time.Microsecond)
}

// TestDetachUnderFlood: a child link that joins its delivering goroutine
// on Attach(nil) sits under a shaped Endpoint in a real stack, flooded
// with pings that the stack answers; RemoveNIC, Stack.Wait and Destroy
// each return, 100 times in a row in the long run (qdisctest.Long), 25 by
// default. The link's goroutine only queues: were it to run the shaper's
// pass, it would deliver to the stack while the stack, holding its lock,
// waits to join it, and the reply path (which takes the stack's lock)
// would never return.
func TestDetachUnderFlood(t *testing.T) {
	trials := 25
	if qdisctest.Long() {
		trials = 100
	}
	for _, tc := range []struct {
		name string
		stop func(s *stack.Stack)
	}{
		{"RemoveNIC", func(s *stack.Stack) { s.RemoveNIC(1) }},
		{"Stack.Wait", func(s *stack.Stack) { s.Wait() }},
		{"Destroy", func(s *stack.Stack) { s.Destroy() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for trial := 0; trial < trials; trial++ {
				detachOnce(t, trial, tc.stop)
			}
		})
	}
}

// detachOnce floods one stack until its shaper waits for its bucket, then
// stops it with stop, which must return.
func detachOnce(t *testing.T, trial int, stop func(*stack.Stack)) {
	t.Helper()
	clock := faketime.NewManualClock()
	s := stack.New(stack.Options{
		NetworkProtocols: []stack.NetworkProtocolFactory{ipv4.NewProtocol},
		Clock:            clock,
	})
	child := &joiningLink{Link: qdisctest.NewLink(clock), credits: make(chan struct{}, 20)}
	child.Discard = true
	e, err := ingress.New(child, clock, tbf.Config{Rate: 10_000_000, Burst: 3000, Limit: 30000, Slack: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateNIC(1, e); err != nil {
		t.Fatalf("CreateNIC: %v", err)
	}
	if err := s.AddProtocolAddress(1, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: hostAddr.WithPrefix()}, stack.AddressProperties{}); err != nil {
		t.Fatalf("AddProtocolAddress: %v", err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: header.IPv4EmptySubnet, NIC: 1}})
	s.SetICMPLimit(1e12) // answer every ping: the reply path takes the stack's lock
	s.SetICMPBurst(1 << 30)

	// Time passes 100 µs (10 packets' worth of the rate) for every 20
	// packets the link delivers, so that the shaper soon waits for its
	// bucket, and goes on so while stop runs (the Alarm's timer fires on
	// the goroutine that moves it).
	for i := 0; i < 10000 && e.Stats().Overlimits < 2; i++ {
		step(clock, child)
		qdisctest.WaitQuiescent(t, e)
	}
	if st := e.Stats(); st.Overlimits == 0 || st.Packets == 0 {
		t.Fatalf("trial %d: the shaper never waited for its bucket (%v): the flood did not fill it", trial, st)
	}
	advancing := make(chan struct{})
	var ticker sync.WaitGroup
	ticker.Add(1)
	go func() {
		defer ticker.Done()
		for i := 0; i < 100000; i++ {
			select {
			case <-advancing:
				return
			default:
			}
			step(clock, child)
		}
	}()
	returned := make(chan struct{})
	go func() {
		stop(s)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(time.Minute): // real time: a deadlock, not a speed
		buf := make([]byte, 1<<20)
		t.Fatalf("trial %d: the stack did not stop; goroutines:\n%s", trial, buf[:runtime.Stack(buf, true)])
	}
	close(advancing)
	ticker.Wait()
	// What is left: a Stack.Wait or RemoveNIC closed the NIC's link (the
	// Endpoint and its shaper); the child's goroutine has been joined.
	s.Destroy()
	e.Close()
	if child.IsAttached() {
		t.Errorf("trial %d: the child link is still attached", trial)
	}
}
