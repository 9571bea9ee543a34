package classify

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ParseRule parses a rule in tc's words, as in
//
//	dst 10.0.0.0/8 src 192.168.0.0/16 proto tcp dport 80 sport 1024-65535 dscp 46 classid 1:10
//
// Every word but classid is optional and may come in any order, at most
// once:
//
//   - dst, src: a prefix (10.0.0.0/8, fd00::/8) or an address (a host).
//   - proto: tcp, udp, udplite, sctp, icmp, icmpv6, or a number 1-255.
//   - dport, sport: a port (80) or a range (1024-65535), 1-65535 (a range
//     may start at 0); they need proto tcp, udp, udplite or sctp.
//   - dscp: 0-63 (decimal, or hex as 0x2e), or a name: cs0-cs7,
//     af11-af43, ef, va, le.
//   - classid (or flowid, as tc also says): the class, as tc's
//     major:minor in hex, 1:10 being 0x00010010; major 1-ffff, minor
//     0-ffff.
//
// An error names the word to fix.
func ParseRule(s string) (Rule, error) {
	words := strings.Fields(s)
	var r Rule
	seen := map[string]bool{}
	class := false
	for i := 0; i < len(words); i += 2 {
		key := words[i]
		if key == "flowid" {
			key = "classid"
		}
		switch key {
		case "dst", "src", "proto", "dport", "sport", "dscp", "classid":
		default:
			return Rule{}, fmt.Errorf("classify: unknown word %q: want dst, src, proto, dport, sport, dscp or classid", words[i])
		}
		if seen[key] {
			return Rule{}, fmt.Errorf("classify: %q given twice", words[i])
		}
		seen[key] = true
		if i+1 == len(words) {
			return Rule{}, fmt.Errorf("classify: %q needs a value", words[i])
		}
		v := words[i+1]
		var err error
		switch key {
		case "dst":
			r.Dst, err = parsePrefix(v)
		case "src":
			r.Src, err = parsePrefix(v)
		case "proto":
			r.Proto, err = parseProto(v)
		case "dport":
			r.DstPorts, err = parsePorts(v)
		case "sport":
			r.SrcPorts, err = parsePorts(v)
		case "dscp":
			r.DSCP, err = parseDSCP(v)
			r.MatchDSCP = true
		case "classid":
			r.Class, err = parseClassID(v)
			class = true
		}
		if err != nil {
			return Rule{}, fmt.Errorf("classify: %s %q: %w", words[i], v, err)
		}
	}
	if !class {
		return Rule{}, errors.New("classify: no classid: say which class the rule's packets go to, e.g. classid 1:10")
	}
	if _, err := compile(r); err != nil {
		return Rule{}, fmt.Errorf("classify: %q: %w", s, err)
	}
	return r, nil
}

func parsePrefix(v string) (netip.Prefix, error) {
	if !strings.Contains(v, "/") {
		a, err := netip.ParseAddr(v)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, errors.New("not an IPv4 or IPv6 address or prefix")
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(v)
	if err != nil {
		return netip.Prefix{}, errors.New("not an IPv4 or IPv6 prefix (10.0.0.0/8, fd00::/8)")
	}
	return p.Masked(), nil
}

var protoNames = map[string]uint8{
	"icmp":    protoICMP,
	"tcp":     protoTCP,
	"udp":     protoUDP,
	"icmpv6":  protoICMPv6,
	"sctp":    protoSCTP,
	"udplite": protoUDPLite,
}

func parseProto(v string) (uint8, error) {
	if p, ok := protoNames[v]; ok {
		return p, nil
	}
	n, err := strconv.ParseUint(v, 10, 8)
	if err != nil || n == 0 {
		return 0, errors.New("want tcp, udp, udplite, sctp, icmp, icmpv6 or an IP protocol number 1-255")
	}
	return uint8(n), nil
}

func protoName(p uint8) string {
	for name, n := range protoNames {
		if n == p {
			return name
		}
	}
	if p == 0 {
		return "any"
	}
	return strconv.Itoa(int(p))
}

func parsePorts(v string) (PortRange, error) {
	lo, hi, isRange := strings.Cut(v, "-")
	if !isRange {
		hi = lo
	}
	l, err1 := strconv.ParseUint(lo, 10, 16)
	h, err2 := strconv.ParseUint(hi, 10, 16)
	switch {
	case err1 != nil || err2 != nil:
		return PortRange{}, errors.New("want a port (80) or a range (1024-65535) of ports 0-65535")
	case l > h:
		return PortRange{}, errors.New("the range's low end is above its high end")
	case h == 0:
		return PortRange{}, errors.New("port 0 alone is no port a packet is sent to; leave the word out to match any port")
	}
	return PortRange{uint16(l), uint16(h)}, nil
}

// dscpNames are the code points of RFC 2474 (class selectors), RFC 2597
// (assured forwarding), RFC 3246 (expedited forwarding), RFC 5865 (voice
// admit) and RFC 8622 (lower effort).
var dscpNames = map[string]uint8{
	"cs0": 0, "cs1": 8, "cs2": 16, "cs3": 24, "cs4": 32, "cs5": 40, "cs6": 48, "cs7": 56,
	"af11": 10, "af12": 12, "af13": 14, "af21": 18, "af22": 20, "af23": 22,
	"af31": 26, "af32": 28, "af33": 30, "af41": 34, "af42": 36, "af43": 38,
	"ef": 46, "va": 44, "le": 1,
}

func parseDSCP(v string) (uint8, error) {
	if d, ok := dscpNames[strings.ToLower(v)]; ok {
		return d, nil
	}
	n, err := strconv.ParseUint(v, 0, 8)
	if err != nil || n > 63 {
		return 0, errors.New("want a DSCP 0-63 (46, 0x2e) or a name (ef, af41, cs1)")
	}
	return uint8(n), nil
}

func parseClassID(v string) (uint32, error) {
	maj, min, ok := strings.Cut(v, ":")
	if !ok {
		return 0, errors.New("want tc's major:minor in hex, e.g. 1:10")
	}
	M, err1 := strconv.ParseUint(maj, 16, 16)
	m, err2 := strconv.ParseUint(min, 16, 16)
	switch {
	case err1 != nil || err2 != nil:
		return 0, errors.New("want tc's major:minor, each 0-ffff in hex, e.g. 1:10")
	case M == 0:
		return 0, errors.New("major 0 is no qdisc's handle")
	}
	return uint32(M)<<16 | uint32(m), nil
}
