package cake

import "fmt"

// MinLinkMTU is the least MTU plus link header (Linux's psched_mtu) a
// link under cake may have: IPv4's least MTU, 68 bytes, with no header.
// Tighten holds a pod's memory limit to the operator's on every link from
// it up.
const MinLinkMTU = 68

// Tighten decides whether an annotation may replace the operator's cake,
// operator, by pod (the operator's configuration with the pod's changes,
// whole): it returns pod if it is valid and shapes no packet looser than
// operator does, else a *ConfigError naming the setting that loosens.
// This is issue 29's rule that annotations may only tighten, written
// out:
//
//   - bandwidth: with the operator's bandwidth set, pod's is set and no
//     higher (never unlimited). With the operator's unlimited (and no
//     autorate-ingress), any bandwidth is tighter.
//   - autorate-ingress: as the operator's, unless the operator's
//     bandwidth is unlimited (then pod may turn it on). On, cake's rate
//     follows what it measures and may rise past the bandwidth given;
//     off, a fixed bandwidth may be above what the operator's estimate
//     would hold the link to.
//   - overhead, mpu, atm and raw, whenever the operator shapes: each
//     packet must cost at least as many bytes as under the operator's
//     (WireLen), for if it costs fewer, more packets pass per second.
//     So overhead and mpu may rise, never fall; the framing may go from
//     noatm to ptm to atm (atm's cells cost more than ptm's coding,
//     which costs more than none, for every length), never back; and
//     raw may be turned on (it counts the link header too), not off
//     (compensation takes the link header off each packet). The rule is
//     sufficient, not necessary: a pod that wants some other mix that
//     still costs more can raise its overhead instead.
//   - ingress may be turned on (cake then counts the packets it drops as
//     sent: less goes through), not off, when the operator shapes.
//   - memlimit: the memory queued packets may take (MemoryLimit) is at
//     most the operator's on every link (MTU plus header MinLinkMTU or
//     more). Memory is the operator's to bound: it is the sandbox's
//     Sentry's, counted against no rate.
//   - rtt and target: free, within the memory rule (the limit cake
//     chooses grows with the rtt). They tune COBALT, which drops or
//     marks the pod's own packets sooner or later; no setting sends more
//     than the shaper's rate.
//   - diffserv, isolation, ack-filter, wash, split-gso: free. They decide
//     which of the pod's packets go first, which of its ACKs are dropped,
//     whether its DSCP leaves as marked, and whether its GSO packets are
//     cut (cake charges every segment of a packet it does not cut); none
//     lets more bytes through than the shaper's rate, and what they
//     change is the pod's own traffic.
//   - nat and fwmark: refused by Validate, in either Config.
func (operator Config) Tighten(pod Config) (Config, error) {
	if err := operator.Validate(); err != nil {
		return Config{}, fmt.Errorf("the operator's configuration is not valid: %w", err)
	}
	if err := pod.Validate(); err != nil {
		return Config{}, err
	}
	op := operator
	shapes := op.Bandwidth != 0 || op.Autorate
	switch {
	case op.Bandwidth != 0 && pod.Bandwidth == 0:
		return Config{}, configErr("bandwidth", "the operator's bandwidth is %s, and unlimited would lift it; give %s or less", rateWord(op.Bandwidth), rateWord(op.Bandwidth))
	case op.Bandwidth != 0 && pod.Bandwidth > op.Bandwidth:
		return Config{}, configErr("bandwidth", "bandwidth %s is above the operator's %s; give %s or less", rateWord(pod.Bandwidth), rateWord(op.Bandwidth), rateWord(op.Bandwidth))
	case op.Autorate && !pod.Autorate:
		return Config{}, configErr("autorate-ingress", "the operator's cake sets its rate from what it measures; without autorate-ingress, the bandwidth could be above that: keep autorate-ingress")
	case !op.Autorate && pod.Autorate && op.Bandwidth != 0:
		return Config{}, configErr("autorate-ingress", "autorate-ingress sets the rate from what cake measures, which may rise past the operator's bandwidth %s; leave autorate-ingress out", rateWord(op.Bandwidth))
	}
	if shapes {
		switch {
		case pod.Overhead < op.Overhead:
			return Config{}, configErr("overhead", "overhead %d is below the operator's %d: every packet would cost fewer bytes, and more would pass; give %d or more", pod.Overhead, op.Overhead, op.Overhead)
		case pod.MPU < op.MPU:
			return Config{}, configErr("mpu", "mpu %d is below the operator's %d: small packets would cost fewer bytes, and more would pass; give %d or more", pod.MPU, op.MPU, op.MPU)
		case atmRank(pod.ATM) < atmRank(op.ATM):
			allowed := "atm"
			if op.ATM == PTM {
				allowed = "ptm or atm"
			}
			return Config{}, configErr("atm", "%s costs packets fewer bytes than the operator's %s, and more would pass; give %s", pod.ATM, op.ATM, allowed)
		case op.Raw && !pod.Raw:
			return Config{}, configErr("raw", "the operator's cake counts each packet's link header (raw); overhead compensation takes it off, and more would pass; keep raw (say raw before the overhead keywords)")
		case op.Ingress && !pod.Ingress:
			return Config{}, configErr("ingress", "the operator's cake counts the packets it drops as sent (ingress); egress would let more through; keep ingress")
		}
	}
	if err := memoryWithin(op, pod); err != nil {
		return Config{}, err
	}
	return pod, nil
}

// atmRank orders the framings by what they add to every length: none,
// then ptm, then atm.
func atmRank(a ATM) int {
	switch a {
	case PTM:
		return 1
	case ATMCells:
		return 2
	}
	return 0
}

// memoryWithin reports whether pod.MemoryLimit(m) <= op.MemoryLimit(m)
// for every m from MinLinkMTU up. Each limit is Memlimit, a constant, or
// min(autoBase, limitPackets*m), which grows with m to autoBase: so the
// pod's explicit limit is checked against the operator's smallest (at
// MinLinkMTU), and the pod's chosen limit at its largest (autoBase)
// against the operator's.
func memoryWithin(op, pod Config) error {
	opMin := uint64(op.MemoryLimit(MinLinkMTU))
	if pod.Memlimit != 0 {
		if uint64(pod.Memlimit) > opMin {
			return configErr("memlimit", "memlimit %s is above the operator's %s; give %s or less", sizeWord(pod.Memlimit), memWord(op), sizeWord(uint32(opMin)))
		}
		return nil
	}
	podMax := pod.autoBase()
	if op.Memlimit != 0 {
		if podMax > uint64(op.Memlimit) {
			return configErr("memlimit", "without memlimit cake would take up to %s (bandwidth for 4 rtts, at least 4Mb), above the operator's memlimit %s; give memlimit %s or less", sizeWord(uint32(podMax)), sizeWord(op.Memlimit), sizeWord(op.Memlimit))
		}
		return nil
	}
	// Both chosen by cake: min(pod's base, 10240m) <= min(op's base,
	// 10240m) for every m holds if the pod's base is no larger.
	if opBase := op.autoBase(); podMax > opBase {
		return configErr("memlimit", "with this bandwidth and rtt cake would take up to %s of memory, above the %s the operator's would (bandwidth for 4 rtts, at least 4Mb); lower the rtt or the bandwidth, or give memlimit %s or less", sizeWord(uint32(podMax)), sizeWord(uint32(opBase)), sizeWord(uint32(opMin)))
	}
	return nil
}

// memWord describes op's memory limit.
func memWord(op Config) string {
	if op.Memlimit != 0 {
		return sizeWord(op.Memlimit)
	}
	return "chosen by cake, " + sizeWord(op.MemoryLimit(MinLinkMTU)) + " on the smallest link"
}
