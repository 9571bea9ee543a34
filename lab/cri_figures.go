package lab

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// CRIOperator is the [runsc_config] of the runsc handler the CRI tests and
// qdiscbench --cri give netqdisc's runsc: an operator's ceiling of
// 100 Mbit/s (what docs/docker.md's example sets).
var CRIOperator = map[string]string{
	"qdisc":             "tbf",
	"qdisc-tbf-rate":    "100mbit",
	"qdisc-tbf-burst":   "128kb",
	"qdisc-tbf-latency": "50ms",
}

// CRITBF is a tbf qdisc in the CRI's namespace as tc -s shows it (the CNI
// bandwidth plugin's): its line and counters.
type CRITBF struct {
	Line                                string
	Bytes, Packets, Dropped, Overlimits uint64
}

var tcBurst = regexp.MustCompile(`burst (\d+)([KMG]?)b`)

// Burst is the tbf's bucket in bytes (tc shows b, Kb, Mb, Gb: bytes and
// their binary multiples).
func (q CRITBF) Burst() uint64 {
	m := tcBurst.FindStringSubmatch(q.Line)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	return n << map[string]uint{"": 0, "K": 10, "M": 20, "G": 30}[m[2]]
}

var tcTBF = regexp.MustCompile(`(qdisc tbf [^\n]*)\n\s*Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)`)

// TBFs lists the tbf qdiscs in the CRI's namespace: the bandwidth
// plugin's, on a pod's host-side veth (what the pod receives) or on its
// ifb (what it sends).
func (c *CRI) TBFs() ([]CRITBF, error) {
	out, err := RunBounded(c.InNS("tc", "-s", "qdisc", "show"), 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("tc -s qdisc show: %v: %s", err, out)
	}
	var qs []CRITBF
	for _, m := range tcTBF.FindAllStringSubmatch(out, -1) {
		q := CRITBF{Line: m[1]}
		for i, p := range []*uint64{&q.Bytes, &q.Packets, &q.Dropped, &q.Overlimits} {
			*p, _ = strconv.ParseUint(m[i+2], 10, 64)
		}
		qs = append(qs, q)
	}
	return qs, nil
}
