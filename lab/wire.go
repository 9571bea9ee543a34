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
