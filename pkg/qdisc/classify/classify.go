// Package classify picks a packet's class from its own headers, as Linux's
// tc flower and u32 filters do for a classful qdisc such as HTB: by
// destination and source prefix (IPv4 and IPv6), IP protocol, destination
// and source port or port range (TCP, UDP, UDP-Lite, SCTP) and DSCP. Rules
// are tried in order; the first that matches gives the class, and a packet
// no rule matches goes to the default class.
//
// A rule is written as tc writes an egress filter: dst and dport are the
// remote end, src and sport the sandbox's own. A classifier built for
// Ingress reads every rule mirrored (dst and dport against the packet's
// source address and port, src and sport against its destination), so one
// list of rules ("the cluster is 10.0.0.0/8") classifies both what the
// sandbox sends there and what it receives from there. A classful qdisc
// builds one Classifier per direction.
//
// # Untrusted headers
//
// Packets come from the sandboxed program or from the network, so their
// headers are read only where they are there and well formed, and never
// past what the packet holds (not even past the bytes its length fields
// claim). The rule is:
//
//   - A packet whose network header is malformed goes to the default class,
//     whatever the rules say: not IPv4 or IPv6 (ARP, any other protocol),
//     a version that is not the protocol's, an IPv4 IHL under 5 words or
//     past the packet, an IPv4 total length under the IHL or past the
//     packet, an IPv6 payload length past the packet, an IPv6 extension
//     header cut short or a chain of more than 8 of them. Lengths that
//     claim less than the packet holds (link padding) are not lies; the
//     header is then read only up to what they claim.
//   - A well-formed packet may still lack a field a rule tests: the
//     ports of a fragment (every fragment, the first included, as Linux's
//     flower reads no ports of fragments, so that all of a datagram's
//     fragments go to one class), of a transport header cut short (under
//     TCP's 20 bytes, UDP's 8, SCTP's 12), or the upper-layer protocol of
//     an IPv6 fragment whose fragment header names another extension
//     header. When the first rule that the packet does not fail on a field
//     it carries tests a field it lacks, the packet goes to the default
//     class. Linux's flower would skip that rule and try the next, which
//     lets a sender move its packets to a later, perhaps unshaped, class
//     by fragmenting them; here the answer is either what every
//     well-formed packet with the same readable fields would get, or the
//     default class.
//
// So the default class should be the most shaped one (the "internet"
// class, with the cluster's prefixes in rules): then no malformed or
// unreadable packet is shaped less than a well-formed one would be.
// Checksums are not checked, as Linux's classifiers do not check them.
//
// Classify takes no locks and allocates nothing; a Classifier is immutable
// and may be shared by any number of goroutines. To change rules, build a
// new one.
package classify

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Direction is which way the packets a Classifier sees travel.
type Direction uint8

const (
	// Egress: packets the sandbox sends. A rule's dst is the packet's
	// destination.
	Egress Direction = iota
	// Ingress: packets the sandbox receives. A rule's dst is the packet's
	// source (the remote end), its src the packet's destination.
	Ingress
)

// String returns "egress" or "ingress".
func (d Direction) String() string {
	switch d {
	case Egress:
		return "egress"
	case Ingress:
		return "ingress"
	}
	return fmt.Sprintf("Direction(%d)", uint8(d))
}

// MaxRules is the most rules a Classifier takes. Linux has no such bound;
// this one is ours: rules are tried one after another, so the cost per
// packet grows with their number (see the benchmark).
const MaxRules = 1024

// Classifier classifies packets by an ordered list of rules.
type Classifier struct {
	rules []rule
	// ports is whether any rule tests ports: if none does, they are not
	// read.
	ports bool
	// v4, when every rule tests addresses only (prefixes, the common
	// case: "the cluster is 10.0.0.0/8"), is the rules as IPv4 masks,
	// which classifyV4 matches straight from an IPv4 header; nil
	// otherwise.
	v4     []rule4
	def    uint32
	dir    Direction
	source []Rule // as given, for Rules
}

// New returns a Classifier for packets travelling in direction dir that
// gives a packet the class of the first rule it matches, else
// defaultClass. It refuses rules that could never match as written, or
// that say something a packet cannot carry, with an error naming the rule.
func New(rules []Rule, defaultClass uint32, dir Direction) (*Classifier, error) {
	if dir != Egress && dir != Ingress {
		return nil, fmt.Errorf("classify: direction %d is neither egress nor ingress", dir)
	}
	if len(rules) > MaxRules {
		return nil, fmt.Errorf("classify: %d rules, more than the %d a classifier takes", len(rules), MaxRules)
	}
	c := &Classifier{rules: make([]rule, len(rules)), def: defaultClass, dir: dir, source: make([]Rule, len(rules))}
	for i, r := range rules {
		cr, err := compile(r)
		if err != nil {
			return nil, fmt.Errorf("classify: rule %d (%v): %w", i+1, r, err)
		}
		c.rules[i] = cr
		c.source[i] = r
		c.ports = c.ports || cr.ports
	}
	c.v4 = compileV4(c.rules, dir)
	return c, nil
}

// Rules returns a copy of the rules c was built with.
func (c *Classifier) Rules() []Rule { return append([]Rule(nil), c.source...) }

// Default returns the class of packets no rule matches.
func (c *Classifier) Default() uint32 { return c.def }

// Direction returns the direction c was built for.
func (c *Classifier) Direction() Direction { return c.dir }

// Classify returns the class of pkt, whose network protocol is protocol:
// the class of the first rule it matches, else the default class (see the
// package comment for packets whose headers cannot be read). pkt's headers
// may have been pushed (the send path: the network header follows the
// link header) or the network header not parsed at all, its bytes at the
// start of pkt.Data() (a packet as a link hands it up). pkt is not
// modified, nor its chunks merged.
func (c *Classifier) Classify(protocol tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) uint32 {
	if protocol == header.IPv4ProtocolNumber && c.v4 != nil {
		// The common case, inlined: rules of prefixes only, an IPv4
		// header in one view.
		if h, _, size := networkBytes(pkt); len(h) >= header.IPv4MinimumSize {
			return c.classifyV4(h, size)
		}
	}
	return c.classify(protocol, pkt)
}

// classify is Classify but for its inlined case.
func (c *Classifier) classify(protocol tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) uint32 {
	if len(c.rules) == 0 {
		return c.def // nothing to read
	}
	f := fields{wantPorts: c.ports}
	var b packetBytes
	var scratch [header.IPv6MinimumSize]byte
	switch protocol {
	case header.IPv4ProtocolNumber:
		b.init(pkt)
		if !parseIPv4(&b, scratch[:], &f) {
			return c.def
		}
	case header.IPv6ProtocolNumber:
		b.init(pkt)
		if !parseIPv6(&b, scratch[:], &f) {
			return c.def
		}
	default:
		return c.def
	}
	if c.dir == Ingress {
		f.dst, f.src = f.src, f.dst
		f.dport, f.sport = f.sport, f.dport
	}
	return c.match(&f)
}

// match returns the class of the first rule f matches, or the default
// class if none does or if a rule before that asks what f lacks.
func (c *Classifier) match(f *fields) uint32 {
	for i := range c.rules {
		r := &c.rules[i]
		if r.family != 0 && r.family != f.family {
			continue
		}
		if !r.dst.contains(f.dst) || !r.src.contains(f.src) {
			continue
		}
		if f.dscp&r.dscpMask != r.dscp {
			continue
		}
		if r.proto != 0 {
			if !f.protoKnown {
				return c.def
			}
			if r.proto != f.proto {
				continue
			}
		}
		if r.ports {
			if !f.portsKnown {
				return c.def
			}
			if f.dport < r.dport.Lo || f.dport > r.dport.Hi || f.sport < r.sport.Lo || f.sport > r.sport.Hi {
				continue
			}
		}
		return r.class
	}
	return c.def
}
