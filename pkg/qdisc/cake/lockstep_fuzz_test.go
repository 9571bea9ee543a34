package cake

import (
	"math"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// fuzzLockstepPackets bounds the packets one input sends.
const fuzzLockstepPackets = 400

// fuzzGSOBudget bounds the payload bytes of the host-GSO packets one input
// sends when split-gso is on: the core counts a segment's memory as its
// PacketBuffer's, the model as its length (FuzzCakeLockstep's doc), so the
// two drop apart once the memory limit is reached. 1.5 MB of payload, its
// segments' buffers and 400 other packets stay below the least limit
// cake sizes for itself (4 MB, cake_reconfigure's floor).
const fuzzGSOBudget = 3 << 19

// FuzzCakeLockstep runs the core and the model (caketest) in lockstep
// (see lockstep_test.go) on a configuration and traffic drawn from the
// input: any rate or unlimited, every isolation, diffserv and ACK filter
// mode, wash, ingress, autorate-ingress, split-gso, overhead, mpu and
// framing, raw, rtt (up to 10s, past the 4.29s at which Linux's
// control law truncates the interval, and interplanetary: fuzzRTT), and a
// memlimit small enough to overflow; packets of
// a few hosts and flows, IPv4 and IPv6, TCP and UDP, any DS field, TCP
// ACKs with any flags and options (lying lengths included), host-GSO
// packets; gaps from a nanosecond to a tenth of a second; and changes of
// the configuration mid-run (cake_change, fuzzChange). Besides every
// comparison the harness makes after each call, it checks that nothing
// panics, that every packet queued (each segment of a split one) is sent,
// dropped or still queued, that the memory queued stays within the limit,
// and (the leak checker, at the end) that every reference is released.
//
// Left out, being the core's documented deviations: a memory limit
// cake sizes from a rate for which cake_reconfigure's u32 arithmetic
// wraps (see avoidLimitWrap); received packets (headers not parsed) that
// wash or a CE mark would change (the core neither washes nor marks
// them); pkt.Hash
// set by the stack, and host-GSO packets under a small memlimit with
// split-gso (the model counts a segment's memory as its length, the core
// its PacketBuffer's), or beyond fuzzGSOBudget under cake's own limit.
func FuzzCakeLockstep(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18"))
	f.Fuzz(runFuzzCakeLockstep)
}

func runFuzzCakeLockstep(t *testing.T, data []byte) {
	in := qdisctest.NewInput(data)
	cfg := fuzzConfig(in)
	avoidLimitWrap(&cfg)
	// Host-GSO packets with split-gso only under cake's own limit, and
	// within fuzzGSOBudget (see there).
	gsoOK := !cfg.SplitGSO || cfg.Memlimit == 0
	gsoBudget := math.MaxInt
	if cfg.SplitGSO {
		gsoBudget = fuzzGSOBudget
	}
	if err := cfg.Validate(); err != nil {
		t.Skip(err)
	}
	l := newLockstep(t, cfg, uint64(in.IntN(1<<32)))
	l.peek = in.IntN(2) == 0
	var arrivals []arrival
	now := int64(0)
	cur := cfg
	for range fuzzLockstepPackets {
		if in.Len() == 0 {
			break
		}
		switch in.IntN(4) {
		case 0:
			now += int64(in.IntN(1000))
		case 1:
			now += int64(in.IntN(1_000_000))
		case 2:
			now += int64(in.IntN(100_000_000))
		}
		if in.IntN(16) == 0 {
			if c, ok := fuzzChange(in, cfg, cur); ok {
				arrivals = append(arrivals, arrival{at: now, change: &c})
				cur = c
			}
			continue
		}
		var a arrival
		switch in.IntN(8) {
		case 0, 1:
			p := fuzzACK(in)
			p.hash = 0
			a.p = p
		case 2:
			if gsoOK {
				mss := 500 + in.IntN(1500)
				payload := mss + 1 + in.IntN(16<<10)
				if payload <= gsoBudget {
					gsoBudget -= payload
					a.p = pk{v6: in.IntN(2) == 0, src: uint16(in.IntN(4)), dst: uint16(in.IntN(2)), sport: uint16(in.IntN(3)), dport: 443,
						payload: payload, tos: uint8(in.IntN(256)), link: 14 * in.IntN(2)}
					a.gsoMSS = mss
					break
				}
			}
			fallthrough
		default:
			proto := uint8(6)
			if in.IntN(2) == 0 {
				proto = 17
			}
			a.p = pk{v6: in.IntN(3) == 0, src: uint16(in.IntN(6)), dst: uint16(in.IntN(3)), proto: proto, sport: uint16(in.IntN(8)), dport: uint16(in.IntN(2)),
				payload: in.IntN(1500), tos: uint8(in.IntN(256)), link: 14 * in.IntN(2), notParsed: in.IntN(4) == 0}
		}
		if a.p.notParsed && (cfg.Wash || a.p.tos&3 != 0) {
			// The core neither washes nor marks a received packet.
			a.p.notParsed = false
		}
		a.at = now
		arrivals = append(arrivals, a)
	}
	// Everything has left, or been dropped, by a few seconds after the
	// last arrival, unless the rate is very low: stop then.
	l.run(arrivals, now+5e9)
}

// fuzzChange draws a cake_change from cur: any new configuration but for
// what the harness holds the core to Linux only where it may (wash, which
// a received packet's arrival reads from the first configuration;
// split-gso and the memory limit, see FuzzCakeLockstep's doc) and fewer
// tins, which the core refuses while the tins dropped hold packets
// (Linux drops them).
func fuzzChange(in *qdisctest.Input, first, cur Config) (Config, bool) {
	c := fuzzConfig(in)
	c.Wash, c.SplitGSO, c.Memlimit = first.Wash, first.SplitGSO, first.Memlimit
	if tinCount[c.Diffserv] < tinCount[cur.Diffserv] {
		c.Diffserv = cur.Diffserv
	}
	avoidLimitWrap(&c)
	return c, c.Validate() == nil
}

// avoidLimitWrap gives c an explicit memlimit, the most cake would size
// it to (10240 packets of the link's MTU), where cake would size it from
// a rate for which Linux's cake_reconfigure wraps rate*rtt/250000 to 32
// bits and the core saturates (its doc.go): a Bandwidth that large, or
// any under autorate-ingress, whose estimate can grow without bound.
func avoidLimitWrap(c *Config) {
	if c.Memlimit != 0 {
		return
	}
	if c.Autorate || c.Bandwidth != 0 && c.Bandwidth*uint64(c.RTT/time.Microsecond)/250_000 >= 1<<32 || c.Bandwidth > 1<<40 {
		c.Memlimit = 10240 * lockstepMTU
	}
}
