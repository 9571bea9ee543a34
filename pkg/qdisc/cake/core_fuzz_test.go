package cake

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// fuzzCakeOps bounds the operations one input runs.
const fuzzCakeOps = 300

// FuzzCake drives a Sched, configured from the input (any rate or none,
// every isolation, diffserv and ACK filter mode, wash, ingress,
// autorate-ingress, split-gso, overhead compensation, a small memlimit),
// through operations the input chooses: enqueues of hostile packets (any
// bytes, layout and protocol, 0 to 65535 bytes), of TCP ACKs with random
// flags and options (lying lengths included) that the ACK filter parses,
// of host-GSO packets to split, dequeues, peeks, clock steps from ns to
// seconds, changes of configuration, and purges. After every operation it
// checks what a user relies on:
//   - nothing panics;
//   - every packet is accounted once: those queued in the tins (segments
//     of a split packet each) are sent, dropped, or still queued;
//   - the counters are the flows' contents, and the memory queued is
//     within the limit;
//   - every reference is released exactly once (the test's own
//     references are all that is left at the end, and the leak checker
//     finds none of the split segments').
func FuzzCake(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18"))
	f.Fuzz(runFuzzCake)
}

// runFuzzCake is FuzzCake's body.
func runFuzzCake(t *testing.T, data []byte) {
	{
		in := qdisctest.NewInput(data)
		cfg := fuzzConfig(in)
		mtu := [...]uint32{1514, 9014, 68, 65535}[in.IntN(4)]
		s, err := newSched(cfg, mtu, 0, flowhash.WithSeed(uint32(in.IntN(1<<32))), uint64(in.IntN(1<<32)))
		if err != nil {
			t.Skip(err)
		}
		var own []*stack.PacketBuffer
		var sent, refused uint64
		now := int64(0)
		for op := 0; op < fuzzCakeOps && in.Len() > 0; op++ {
			var pkt *stack.PacketBuffer
			switch in.IntN(16) {
			case 0, 1, 2, 3:
				pkt = qdisctest.HostilePacket(in, qdisctest.HostileSize(in))
			case 4, 5:
				pkt = fuzzACK(in).build()
			case 6:
				pkt = qdisctest.GSOPacket(in.IntN(1<<15), 536+in.IntN(8500), uint32(in.IntN(4)), 0, 1)
			case 7, 8, 9, 10:
				if p, _, ok := s.Dequeue(now); ok {
					sent++
					p.DecRef()
				}
			case 11:
				var sizes [1]uint32
				var at [1]int64
				s.Peek(now, sizes[:], at[:])
			case 12, 13:
				now += int64(in.IntN(1<<16)) << (8 * in.IntN(4))
			case 14:
				if in.IntN(4) == 0 {
					s.Purge()
				} else {
					_ = s.Change(fuzzConfig(in))
				}
			case 15:
				for range in.IntN(64) {
					if p, _, ok := s.Dequeue(now); ok {
						sent++
						p.DecRef()
					}
					now += int64(in.IntN(1 << 20))
				}
			}
			if pkt != nil {
				own = append(own, pkt)
				if !s.Enqueue(pkt.IncRef(), uint32(min(pkt.Size(), 1<<32-1))+uint32(in.IntN(2)), now) {
					pkt.DecRef()
					refused++
				}
				checkMemory(t, s)
			}
			checkInvariants(t, s)
			var queued uint64
			for i := range s.tins {
				queued += uint64(s.tins[i].packets)
			}
			if queued+refused != sent+s.drops+uint64(s.qlen)+s.purged {
				t.Fatalf("queued %d + refused %d != sent %d + dropped %d + queued now %d + purged %d", queued, refused, sent, s.drops, s.qlen, s.purged)
			}
		}
		s.Purge()
		qdisctest.CheckReleased(t, own)
	}
}

// fuzzConfig draws a valid-looking configuration from in (Validate
// refuses the rest).
func fuzzConfig(in *qdisctest.Input) Config {
	c := DefaultConfig()
	switch in.IntN(3) {
	case 0:
		c.Bandwidth = 0
	case 1:
		c.Bandwidth = uint64(64 + in.IntN(1<<20))
	default:
		c.Bandwidth = uint64(64+in.IntN(1<<16)) << in.IntN(24)
	}
	c.Isolation = Isolation(in.IntN(int(numIsolation)))
	c.Diffserv = Diffserv(in.IntN(int(numDiffserv)))
	c.AckFilter = AckFilter(in.IntN(int(numAckFilter)))
	c.Wash = in.IntN(2) == 0
	c.Ingress = in.IntN(2) == 0
	c.Autorate = in.IntN(4) == 0
	c.SplitGSO = in.IntN(2) == 0
	c.Raw = in.IntN(2) == 0
	c.Overhead = int32(in.IntN(MaxOverhead-MinOverhead+1) + MinOverhead)
	c.MPU = uint32(in.IntN(MaxMPU + 1))
	c.ATM = ATM(in.IntN(int(numATM)))
	c.RTT, c.Target = fuzzRTT(in)
	if in.IntN(2) == 0 {
		c.Memlimit = uint32(MinMemlimit + in.IntN(1<<18))
	}
	return c
}

// fuzzRTT draws an rtt and tc's target for it (rtt/20, at least 1us)
// from three bytes of the input: half of the draws up to 1.05s, 7/16 from
// 1s to 10s, where the control law's interval passes 2^32 ns (4.29s)
// and Linux's reciprocal_scale truncates it, and 1/16 interplanetary
// (1000s, target 50s).
func fuzzRTT(in *qdisctest.Input) (rtt, target time.Duration) {
	v := in.IntN(1 << 24)
	switch k, u := v>>20, v&(1<<20-1); {
	case k < 8:
		rtt = time.Duration(1+u) * time.Microsecond
	case k < 15:
		rtt = time.Second + time.Duration(u*9_000_000>>20)*time.Microsecond
	default:
		return 1000 * time.Second, 50 * time.Second
	}
	return rtt, max(rtt/20/time.Microsecond, 1) * time.Microsecond
}

// fuzzACK draws a TCP packet the ACK filter reads: one of a few
// connections, any flags, ACK numbers and options bytes.
func fuzzACK(in *qdisctest.Input) pk {
	p := pk{v6: in.IntN(2) == 0, src: uint16(in.IntN(2)), sport: uint16(in.IntN(2)), dport: 80,
		flags: header.TCPFlags(in.IntN(256)), ack: uint32(in.IntN(1 << 32)), payload: in.IntN(3) * in.IntN(100),
		tos: uint8(in.IntN(256)), hash: uint32(in.IntN(2)), notParsed: in.IntN(4) == 0, totalDelta: in.IntN(3) - 1}
	opts := make([]byte, in.IntN(41))
	for i := range opts {
		switch in.IntN(4) {
		case 0:
			opts[i] = [...]byte{0, 1, 5, 8, 19, 2, 10, 34}[in.IntN(8)]
		default:
			opts[i] = byte(in.IntN(256))
		}
	}
	p.opts = opts
	return p
}
