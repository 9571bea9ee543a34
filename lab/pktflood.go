package lab

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// FloodPayload is the UDP payload of a flood's datagrams: with UDP's 8
// bytes, IPv4's 20 and Ethernet's 14, a 64-byte frame, the smallest
// Ethernet carries (without its FCS): the flood that costs the most per
// byte, which a packet ceiling exists for.
const FloodPayload = 22

// FloodResult is what a flood of 64-byte frames did over a window.
type FloodResult struct {
	// Offered is the frames per second the flood's sender put on its
	// link, Passed those the shaper let through (to the peer's veth, or up
	// to the sandbox's stack).
	Offered, Passed float64
	// CPU is the sandbox's CPU time over the window, in cores (seconds of
	// CPU a second).
	CPU float64
}

// FloodSender is a program that floods UDP: `BIN send -to ADDR:PORT -pps
// N -size S -for D` (e2e's testdata/sequdp). A sandbox that runs it must
// mount its directory.
type FloodSender string

// FloodFromSandbox floods the peer from inside s with 64-byte frames as
// fast as the sandbox sends them, and counts, over window after warmup,
// the frames that reach the peer's veth and the sandbox's CPU.
func (l *Lab) FloodFromSandbox(s *Sandbox, bin FloodSender, warmup, window time.Duration) (FloodResult, error) {
	var out strings.Builder
	cmd, err := s.Exec(&out, string(bin), "send", "-to", PeerAddr+":9", "-pps", "100000000", "-size", strconv.Itoa(FloodPayload), "-for", (warmup + window + 2*time.Second).String())
	if err != nil {
		return FloodResult{}, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	passed := func() (uint64, error) { return netStat(l.NSP, l.VethP1, "rx_packets") }
	return floodWindow(warmup, window, passed, passed, s.CPU)
}

// FloodToSandbox floods s from the peer's kernel with 64-byte frames to a
// port nothing listens on, and counts, over window after warmup, what the
// peer's veth sent, what s's ingress shaper let up to its stack (runsc
// qdisc show), and the sandbox's CPU.
func (l *Lab) FloodToSandbox(s *Sandbox, bin FloodSender, warmup, window time.Duration) (FloodResult, error) {
	var out strings.Builder
	cmd, err := l.Start(l.NSP, &out, string(bin), "send", "-to", NetstackAddr+":9", "-pps", "100000000", "-size", strconv.Itoa(FloodPayload), "-for", (warmup + window + 2*time.Second).String())
	if err != nil {
		return FloodResult{}, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	offered := func() (uint64, error) { return netStat(l.NSP, l.VethP1, "tx_packets") }
	passed := func() (uint64, error) { return s.ingressSent() }
	return floodWindow(warmup, window, offered, passed, s.CPU)
}

// floodWindow waits warmup, then reads the counters and the CPU across
// window. passed may be slow to read (runsc qdisc show): each reading's
// time is the middle of its call.
func floodWindow(warmup, window time.Duration, offered, passed func() (uint64, error), cpu func() (time.Duration, error)) (FloodResult, error) {
	time.Sleep(warmup)
	read := func() (o, p uint64, c time.Duration, at time.Time, err error) {
		if o, err = offered(); err != nil {
			return
		}
		before := time.Now()
		if p, err = passed(); err != nil {
			return
		}
		at = before.Add(time.Since(before) / 2)
		c, err = cpu()
		return
	}
	o0, p0, c0, t0, err := read()
	if err != nil {
		return FloodResult{}, err
	}
	time.Sleep(window)
	o1, p1, c1, t1, err := read()
	if err != nil {
		return FloodResult{}, err
	}
	secs := t1.Sub(t0).Seconds()
	return FloodResult{Offered: float64(o1-o0) / secs, Passed: float64(p1-p0) / secs, CPU: (c1 - c0).Seconds() / secs}, nil
}

// netStat reads a counter of dev's in namespace ns
// (/sys/class/net/DEV/statistics/NAME).
func netStat(ns, dev, name string) (uint64, error) {
	out, err := Run(ns, "cat", "/sys/class/net/"+dev+"/statistics/"+name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(out), 10, 64)
}

// ingressLine is the ingress shaper's counters in `runsc qdisc show`.
var ingressLine = regexp.MustCompile(`qdisc ingress [^\n]*\n Sent \d+ bytes (\d+) pkt`)

// ingressSent returns the packets s's ingress shaper has let up to the
// stack, from `runsc qdisc show`.
func (s *Sandbox) ingressSent() (uint64, error) {
	out, err := s.QDisc("show")
	if err != nil {
		return 0, err
	}
	m := ingressLine.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("runsc qdisc show has no ingress counters:\n%s", out)
	}
	return strconv.ParseUint(m[1], 10, 64)
}
