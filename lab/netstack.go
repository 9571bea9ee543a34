package lab

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/fdbased"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// MakeQDisc builds the qdisc for the netstack's NIC (nil: none).
type MakeQDisc func(lower stack.LinkEndpoint, clock tcpip.Clock) (stack.QueueingDiscipline, error)

// Netstack is a gVisor netstack on the Lab's vethN, through an AF_PACKET
// socket and gVisor's fdbased endpoint, with a qdisc on its NIC.
type Netstack struct {
	Stack *stack.Stack
	QDisc stack.QueueingDiscipline
	fd    int
}

// packetSocket opens an AF_PACKET socket bound to dev inside namespace ns,
// from a thread that enters ns and then returns to this process's own.
func packetSocket(ns, dev string) (fd int, mac net.HardwareAddr, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	defer unix.Close(self)
	target, err := unix.Open("/var/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		return -1, nil, fmt.Errorf("setns %s: %w", ns, err)
	}
	defer func() {
		if e := unix.Setns(self, unix.CLONE_NEWNET); e != nil {
			// The thread cannot go back: do not let the runtime reuse it.
			runtime.Goexit()
		}
	}()
	ifc, err := net.InterfaceByName(dev)
	if err != nil {
		return -1, nil, err
	}
	proto := int(htons(unix.ETH_P_ALL))
	fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return -1, nil, fmt.Errorf("AF_PACKET socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifc.Index}); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("bind to %s: %w", dev, err)
	}
	return fd, ifc.HardwareAddr, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// StartNetstack starts the netstack on vethN at NetstackAddr, with the qdisc
// mk builds on its NIC.
func (l *Lab) StartNetstack(mk MakeQDisc) (*Netstack, error) { return l.StartNetstackOn(mk, nil) }

// StartNetstackOn is StartNetstack with the link endpoint wrapped by wrap
// (if not nil), as a runtime wraps it in the receive-direction shaper.
func (l *Lab) StartNetstackOn(mk MakeQDisc, wrap WrapLink) (*Netstack, error) {
	fd, mac, err := packetSocket(l.NSN, l.VethN)
	if err != nil {
		return nil, err
	}
	ep, err := fdbased.New(&fdbased.Options{
		FDs:                []int{fd},
		MTU:                1500,
		EthernetHeader:     true,
		Address:            tcpip.LinkAddress(mac),
		RXChecksumOffload:  true, // the kernel peer sends partial checksums
		PacketDispatchMode: fdbased.RecvMMsg,
	})
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
	})
	sack := tcpip.TCPSACKEnabled(true)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	n := &Netstack{Stack: s, fd: fd}
	var link stack.LinkEndpoint = ep
	if wrap != nil {
		if link, err = wrap(ep, s.Clock()); err != nil {
			s.Destroy()
			unix.Close(fd)
			return nil, err
		}
	}
	q, err := mk(link, s.Clock())
	if err != nil {
		link.Close() // stops a wrapping shaper
		s.Destroy()
		unix.Close(fd)
		return nil, err
	}
	n.QDisc = q
	if err := s.CreateNICWithOptions(1, link, stack.NICOptions{QDisc: q}); err != nil {
		if q != nil {
			q.Close()
		}
		link.Close()
		n.Close()
		return nil, fmt.Errorf("CreateNIC: %s", err)
	}
	addr := tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFromSlice(net.ParseIP(NetstackAddr).To4()), PrefixLen: 24}}
	if err := s.AddProtocolAddress(1, addr, stack.AddressProperties{}); err != nil {
		n.Close()
		return nil, fmt.Errorf("AddProtocolAddress: %s", err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: addr.AddressWithPrefix.Subnet(), NIC: 1}})
	return n, nil
}

// Close destroys the stack (removing its NIC stops the endpoint's readers
// and closes the qdisc) and closes the socket.
func (n *Netstack) Close() {
	n.Stack.Destroy()
	unix.Close(n.fd)
}

// Dial opens a TCP connection from the netstack to addr:port.
func (n *Netstack) Dial(addr string, port int) (*gonet.TCPConn, error) {
	return gonet.DialTCP(n.Stack, tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFromSlice(net.ParseIP(addr).To4()), Port: uint16(port)}, ipv4.ProtocolNumber)
}

// Sender writes a deterministic stream and hashes what it wrote.
type Sender struct {
	Sent atomic.Uint64
	h    hash.Hash
	seed uint64
}

// NewSender returns a Sender whose content depends on seed.
func NewSender(seed uint64) *Sender { return &Sender{h: sha256.New(), seed: seed} }

// Run writes to conn until it has written limit bytes (0: no limit) or a
// write fails or stop is set, then closes conn.
func (s *Sender) Run(conn net.Conn, limit uint64, stop *atomic.Bool) error {
	defer conn.Close()
	buf := make([]byte, 32<<10)
	x := s.seed*0x9e3779b97f4a7c15 + 1
	for stop == nil || !stop.Load() {
		n := len(buf)
		if limit != 0 {
			left := limit - s.Sent.Load()
			if left == 0 {
				return nil
			}
			n = int(min(uint64(n), left))
		}
		for i := 0; i < n; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			buf[i] = byte(x)
		}
		conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
		w, err := conn.Write(buf[:n])
		s.h.Write(buf[:w])
		s.Sent.Add(uint64(w))
		if err != nil {
			return err
		}
	}
	return nil
}

// Sum returns the SHA-256 of what was written, in hex.
func (s *Sender) Sum() string { return fmt.Sprintf("%x", s.h.Sum(nil)) }

// WrapLink wraps the netstack's link endpoint before its NIC is made: the
// receive-direction shaper (runscflags.Config.NewIngress).
type WrapLink func(link stack.LinkEndpoint, clock tcpip.Clock) (stack.LinkEndpoint, error)

// RxWireBytes returns the L2 bytes the netstack's NIC has received: gVisor
// counts the network-layer bytes, to which each packet's Ethernet header
// is added.
func (n *Netstack) RxWireBytes() (uint64, error) {
	info, ok := n.Stack.NICInfo()[1]
	if !ok {
		return 0, fmt.Errorf("the netstack has no NIC 1")
	}
	rx := info.Stats.Rx
	return rx.Bytes.Value() + header.EthernetMinimumSize*rx.Packets.Value(), nil
}

// Sink accepts TCP connections on port and discards what they send, until
// the returned stop is called (which closes the listener and the
// connections).
func (n *Netstack) Sink(port uint16) (stop func(), err error) {
	ln, err := gonet.ListenTCP(n.Stack, tcpip.FullAddress{NIC: 1, Port: port}, ipv4.ProtocolNumber)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}, nil
}
