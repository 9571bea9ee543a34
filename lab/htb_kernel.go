package lab

// This file holds the kernel's control run: sch_htb put on the kernel
// sender's veth with tc, its class counters read back, and the run.

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// KernelHTBCommands are the tc commands that put cfg on dev as Linux's
// sch_htb: the qdisc, its classes in order, and each rule as a u32 filter
// by destination (tc's defaults where cfg leaves a field 0, as ours fill
// them). Its rules' prefixes are moved to the kernel side (kernelSide).
// What sch_htb or u32 by destination cannot say is an error: a quota, a
// leaf qdisc, a leaf limit, a rule matching anything but an IPv4
// destination.
func KernelHTBCommands(dev string, cfg htb.Config) ([][]string, error) {
	handle := cfg.Handle
	if handle == 0 {
		handle = 1 << 16
	}
	major := fmt.Sprintf("%x:", handle>>16)
	q := []string{"tc", "qdisc", "replace", "dev", dev, "root", "handle", major, "htb"}
	if cfg.Default != 0 {
		q = append(q, "default", fmt.Sprintf("%x", cfg.Default&0xffff))
	}
	if cfg.R2Q != 0 {
		q = append(q, "r2q", fmt.Sprint(cfg.R2Q))
	}
	if cfg.DirectQLen != 0 {
		q = append(q, "direct_qlen", fmt.Sprint(cfg.DirectQLen))
	}
	if cfg.LeafLimit != 0 {
		return nil, fmt.Errorf("a leaf limit: the kernel's leaves take the device's tx_queue_len")
	}
	if len(cfg.Chains) != 0 {
		return nil, fmt.Errorf("filters on a class's chain: the kernel's side here is given the root chain's filters only")
	}
	cmds := [][]string{q}
	for _, c := range cfg.Classes {
		id := classify.ClassID(c.ID)
		switch {
		case c.Quota != nil:
			return nil, fmt.Errorf("class %s: Linux's htb has no quota", id)
		case c.Leaf != nil:
			return nil, fmt.Errorf("class %s: a leaf qdisc: graft the kernel's with tc qdisc add parent %s", id, id)
		}
		parent := major
		if c.Parent != 0 && c.Parent != handle {
			parent = classify.ClassID(c.Parent)
		}
		cmd := []string{"tc", "class", "add", "dev", dev, "parent", parent, "classid", id, "htb", "rate", fmt.Sprintf("%dbit", c.Rate*8)}
		if c.Ceil != 0 {
			cmd = append(cmd, "ceil", fmt.Sprintf("%dbit", c.Ceil*8))
		}
		for _, o := range []struct {
			name string
			v    int64
		}{{"burst", int64(c.Burst)}, {"cburst", int64(c.CBurst)}, {"quantum", int64(c.Quantum)}, {"overhead", int64(c.Overhead)}, {"mpu", int64(c.MPU)}} {
			if o.v != 0 {
				cmd = append(cmd, o.name, fmt.Sprint(o.v))
			}
		}
		cmds = append(cmds, append(cmd, "prio", fmt.Sprint(c.Prio)))
	}
	for i, r := range cfg.Rules {
		dstOnly := classify.Rule{Dst: r.Dst, Class: r.Class}
		if r != dstOnly || !r.Dst.IsValid() || !r.Dst.Addr().Is4() {
			return nil, fmt.Errorf("filter %d (%s): only a rule by IPv4 destination has a u32 twin here", i+1, r)
		}
		dst := netip.PrefixFrom(kernelSide(r.Dst.Addr()), r.Dst.Bits()).Masked()
		cmds = append(cmds, []string{"tc", "filter", "add", "dev", dev, "parent", major, "protocol", "ip", "prio", fmt.Sprint(i + 1),
			"u32", "match", "ip", "dst", dst.String(), "flowid", classify.ClassID(r.Class)})
	}
	return cmds, nil
}

// KernelHTB puts cfg on dev in ns as Linux's sch_htb (KernelHTBCommands)
// and returns what tc warned ("quantum of class ... is big").
func KernelHTB(ns, dev string, cfg htb.Config) (warnings []string, err error) {
	cmds, err := KernelHTBCommands(dev, cfg)
	if err != nil {
		return nil, err
	}
	for _, c := range cmds {
		out, err := Run(ns, c...)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line != "" {
				warnings = append(warnings, line)
			}
		}
	}
	return warnings, nil
}

// KernelClassBytes reads `tc -s class show dev dev` in ns: every class's
// Sent bytes.
func KernelClassBytes(ns, dev string) (map[uint32]uint64, error) {
	out, err := Run(ns, "tc", "-s", "class", "show", "dev", dev)
	if err != nil {
		return nil, err
	}
	return parseClassBytes(out)
}

// parseClassBytes reads each class's Sent bytes from `tc -s class show`'s
// output: a "class htb 1:10 ..." line, then " Sent N bytes M pkt ...".
func parseClassBytes(out string) (map[uint32]uint64, error) {
	bytes := map[uint32]uint64{}
	var cur uint32
	have := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "class":
			id, err := parseClassID(f[2])
			if err != nil {
				return nil, fmt.Errorf("tc -s class show: %q: %v", line, err)
			}
			cur, have = id, true
		case len(f) >= 3 && f[0] == "Sent" && f[2] == "bytes" && have:
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("tc -s class show: %q: %v", line, err)
			}
			bytes[cur] = n
			have = false
		}
	}
	if len(bytes) == 0 {
		return nil, fmt.Errorf("tc -s class show: no class in %q", out)
	}
	return bytes, nil
}

// parseClassID reads a classid as tc prints it: hex major:minor.
func parseClassID(s string) (uint32, error) {
	maj, min, ok := strings.Cut(s, ":")
	a, err1 := strconv.ParseUint(maj, 16, 16)
	b, err2 := strconv.ParseUint(min, 16, 16)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("classid %q: want hex major:minor", s)
	}
	return uint32(a)<<16 | uint32(b), nil
}

// MeasureKernelHTB puts cfg on the kernel sender's veth as Linux's sch_htb
// (KernelHTB), runs iperf with each load's streams to its destination's
// kernel side twin, and reads each class's counter (tc -s class show)
// over o.Window after o.Warmup, the peer's goodput per class and, with
// o.PingInterval, pings from each class's peer address. It returns tc's
// warnings too.
func (l *Lab) MeasureKernelHTB(cfg htb.Config, loads []ClassLoad, o measure.Options) (HTBResult, []string, error) {
	var warnings []string
	install := func() (err error) {
		warnings, err = KernelHTB(l.NSK, l.VethK, cfg)
		return err
	}
	counters := func() (map[uint32]uint64, error) { return KernelClassBytes(l.NSK, l.VethK) }
	r, err := l.measureKernelLoads(install, counters, "class", loads, o)
	return r, warnings, err
}

// MeasureKernelTBF is MeasureKernelHTB with Linux's sch_tbf at rate and
// burst (bytes/s, bytes) and latency on the kernel sender's veth in place
// of classes: one FIFO for every load, so its loads' Bytes are 0 and
// their goodput tells them apart.
func (l *Lab) MeasureKernelTBF(rate, burst uint64, latency time.Duration, loads []ClassLoad, o measure.Options) (HTBResult, error) {
	install := func() error { return Tbf(l.NSK, l.VethK, rate, burst, latency) }
	none := func() (map[uint32]uint64, error) { return nil, nil }
	return l.measureKernelLoads(install, none, "qdisc", loads, o)
}

// measureKernelLoads runs loads from the kernel sender with the root qdisc
// install puts on its veth (removed after), as MeasureKernelHTB says,
// reading counters for the loads' classes, and at the end `tc -s show`
// of what (class or qdisc) into the result's TC.
func (l *Lab) measureKernelLoads(install func() error, counters func() (map[uint32]uint64, error), what string, loads []ClassLoad, o measure.Options) (HTBResult, error) {
	var r HTBResult
	if err := checkLoads(loads); err != nil {
		return r, err
	}
	peers := make([]string, len(loads))
	for i, ld := range loads {
		peers[i] = kernelSide(netip.MustParseAddr(ld.Dst)).String() // checked
	}
	if err := l.AddClusterPeer(nil); err != nil {
		return r, err
	}
	if err := install(); err != nil {
		return r, err
	}
	defer Run(l.NSK, "tc", "qdisc", "del", "dev", l.VethK, "root")
	stop, err := l.startIperfServer()
	if err != nil {
		return r, err
	}
	defer stop()
	idle, err := idleRTTs(l.NSP, peers, KernelAddr)
	if err != nil {
		return r, err
	}
	for i, ld := range loads {
		o := o
		o.Streams = ld.Streams
		cli, err := l.Start(l.NSK, nil, iperfArgs(peers[i], o)...)
		if err != nil {
			return r, err
		}
		defer cli.Process.Kill()
	}
	err = l.htbWindow(loads, peers, KernelAddr, counters, wireBytes(l.NSP, l.VethP2), o, &r)
	for i := range r.Classes {
		r.Classes[i].IdleRTT = idle[i]
	}
	r.TC, _ = Run(l.NSK, "tc", "-s", what, "show", "dev", l.VethK)
	return r, err
}
