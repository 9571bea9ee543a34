package lab

import (
	"fmt"
	"strconv"
	"strings"
)

// gsoSegmentHeaders is what each segment after the first of a GSO packet
// from a sandbox adds on a real wire: Ethernet, IPv4 and TCP with
// timestamps (14 + 20 + 32 bytes), as the lab's IPv4 streams send them.
const gsoSegmentHeaders = 14 + 20 + 32

// WireBytes counts the bytes dev in ns has received as a wire would carry
// them. A veth passes a sandbox's host-GSO packets whole: rx_bytes counts
// each with one set of headers, rx_packets once. The IP layer counts the
// segments each stands for (IpExtIn*Pkts add gso_segs), so every segment
// past the first adds its headers: rx_bytes + (segments - rx_packets) *
// gsoSegmentHeaders. Without GSO the two counts agree and this is
// rx_bytes. It assumes dev is the namespace's only busy interface.
func WireBytes(ns, dev string) (uint64, error) {
	out, err := Run(ns, "sh", "-c", fmt.Sprintf("cat /sys/class/net/%s/statistics/rx_bytes /sys/class/net/%s/statistics/rx_packets /proc/net/netstat", dev, dev))
	if err != nil {
		return 0, err
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 3 {
		return 0, fmt.Errorf("reading %s's counters in %s: %q", dev, ns, out)
	}
	rxBytes, err1 := strconv.ParseUint(strings.TrimSpace(lines[0]), 10, 64)
	rxPackets, err2 := strconv.ParseUint(strings.TrimSpace(lines[1]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("reading %s's counters in %s: %q", dev, ns, out)
	}
	segs, err := ipSegments(lines[2:])
	if err != nil {
		return 0, err
	}
	if segs < rxPackets {
		return rxBytes, nil
	}
	return rxBytes + (segs-rxPackets)*gsoSegmentHeaders, nil
}

// ipSegments sums IpExt's InNoECTPkts, InECT1Pkts, InECT0Pkts and
// InCEPkts from /proc/net/netstat's lines: every IP packet received,
// counted per segment.
func ipSegments(lines []string) (uint64, error) {
	for i := 0; i+1 < len(lines); i++ {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != "IpExt:" || len(values) != len(names) || values[0] != "IpExt:" {
			continue
		}
		var sum uint64
		for k, n := range names {
			switch n {
			case "InNoECTPkts", "InECT1Pkts", "InECT0Pkts", "InCEPkts":
				v, err := strconv.ParseUint(values[k], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("IpExt %s: %v", n, err)
				}
				sum += v
			}
		}
		return sum, nil
	}
	return 0, fmt.Errorf("no IpExt counters in /proc/net/netstat")
}

// PeerDeliveredBytes counts what the peer's TCP has had delivered to addr
// so far, as a wire carries it: over its open connections to addr (ss
// -tin), the payload acknowledged (bytes_acked) and each segment
// delivered (delivered, the segments the receiver acknowledged or
// SACKed) with its headers (gsoSegmentHeaders). A host-GSO packet counts
// as its segments, what a shaper dropped not at all: it is the bytes
// TestCRIIngressBandwidth counts (the payload the receiver read, and the
// sender's segments with their headers), read at the sender. It counts
// only connections that are open: read it while the streams run.
func (l *Lab) PeerDeliveredBytes(addr string) (uint64, error) {
	out, err := Run(l.NSP, "ss", "-tinH", "dst", addr)
	if err != nil {
		return 0, err
	}
	acked, delivered, err := parseDelivered(out)
	if err != nil {
		return 0, err
	}
	return acked + delivered*gsoSegmentHeaders, nil
}

// parseDelivered sums the bytes_acked and delivered fields of ss -tin's
// output: one line per connection and one of its TCP information, which
// every connection has.
func parseDelivered(out string) (acked, delivered uint64, err error) {
	for _, f := range strings.Fields(out) {
		name, v, ok := strings.Cut(f, ":")
		if !ok || (name != "bytes_acked" && name != "delivered") {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("ss: %s: %v", f, err)
		}
		if name == "delivered" {
			delivered += n
		} else {
			acked += n
		}
	}
	return acked, delivered, nil
}

// PeerGSO turns TSO and GSO on or off on the peer's veth facing the
// netstack (New turns them off, so that the kernel sends MTU-sized
// frames). On, the peer's TCP hands the netstack's veth host-GSO packets
// of up to 64 KiB, as a host's own TCP does a pod's veth through a
// bridge: what a sandbox with host GSO then reads are those packets
// whole, which its ingress shaper charges as their segments.
func (l *Lab) PeerGSO(on bool) error {
	v := "off"
	if on {
		v = "on"
	}
	_, err := Run(l.NSP, "ethtool", "-K", l.VethP1, "tso", v, "gso", v)
	return err
}
