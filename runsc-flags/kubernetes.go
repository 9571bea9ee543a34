package runscflags

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// Kubernetes' pod bandwidth annotations, in bits per second as Kubernetes
// quantities ("10M", "1G", "500k"). Kubelet hands them to the CNI bandwidth
// plugin; a runtime that passes pod annotations into the OCI spec
// (containerd's pod_annotations, CRI-O's allowed_annotations) hands them
// to ApplyAnnotations, which honours them as requests to tighten shaping:
// egress-bandwidth as the tbf's rate, ingress-bandwidth as the ingress
// shaper's.
const (
	AnnotationKubeEgress  = "kubernetes.io/egress-bandwidth"
	AnnotationKubeIngress = "kubernetes.io/ingress-bandwidth"
)

// KubeLatency bounds the queue a bandwidth annotation sets up: the CNI
// bandwidth plugin's latency, limit = rate*latency + burst.
const KubeLatency = 25 * time.Millisecond

// The burst a bandwidth annotation sets up: 10 ms of the rate, and never
// less than the largest packet a gVisor NIC passes with host GSO (64 KiB
// plus the Ethernet header), so that it fits every NIC. Kubelet asks the
// plugin for a burst of 2^31-1 bits (256 MiB): the first 256 MiB of every
// transfer would pass unshaped.
const (
	kubeBurstTime = 10 * time.Millisecond
	kubeMinBurst  = 65536 + 14
)

// Kubelet accepts bandwidths from 1 kbit/s to 1 Pbit/s; above 1 Tbit/s the
// queue that 25 ms hold no longer fits the 4 GiB a limit can be.
const (
	kubeMinBits = 1_000
	kubeMaxBits = 1_000_000_000_000
)

// kubeSuffixes are a Kubernetes quantity's multipliers.
var kubeSuffixes = []struct {
	suffix string
	mul    *big.Rat
}{
	{"Ki", big.NewRat(1<<10, 1)}, {"Mi", big.NewRat(1<<20, 1)}, {"Gi", big.NewRat(1<<30, 1)},
	{"Ti", big.NewRat(1<<40, 1)}, {"Pi", big.NewRat(1<<50, 1)}, {"Ei", big.NewRat(1<<60, 1)},
	{"k", big.NewRat(1e3, 1)}, {"M", big.NewRat(1e6, 1)}, {"G", big.NewRat(1e9, 1)},
	{"T", big.NewRat(1e12, 1)}, {"P", big.NewRat(1e15, 1)}, {"E", big.NewRat(1e18, 1)},
	{"m", big.NewRat(1, 1e3)}, {"u", big.NewRat(1, 1e6)}, {"n", big.NewRat(1, 1e9)},
}

// ParseKubeBandwidth reads a Kubernetes quantity in bits per second ("10M",
// "1.5G", "500k", "1Mi", "1e6") and returns it in bytes per second.
func ParseKubeBandwidth(s string) (uint64, error) {
	num, mul := s, big.NewRat(1, 1)
	for _, k := range kubeSuffixes {
		if strings.HasSuffix(s, k.suffix) {
			num, mul = strings.TrimSuffix(s, k.suffix), k.mul
			break
		}
	}
	v, ok := new(big.Rat).SetString(num)
	if num == "" || !ok || strings.ContainsAny(num, " /_") || strings.HasPrefix(num, "-") {
		return 0, fmt.Errorf("%q is not a Kubernetes quantity in bits/s, such as 10M, 1G or 500k", s)
	}
	bits := v.Mul(v, mul)
	if bits.Cmp(big.NewRat(kubeMinBits, 1)) < 0 || bits.Cmp(big.NewRat(kubeMaxBits, 1)) > 0 {
		return 0, fmt.Errorf("%s bits/s is out of range; give 1k to 1T", bits.FloatString(0))
	}
	bytes, _ := new(big.Rat).Quo(bits, big.NewRat(8, 1)).Float64()
	return uint64(math.Floor(bytes)), nil
}

// kubeBurst is the burst a bandwidth annotation of r bytes/s sets up.
func kubeBurst(r uint64) uint64 {
	return max(uint64(float64(r)*kubeBurstTime.Seconds()), kubeMinBurst)
}

// minSet is the smaller of a and b that is set (non-zero).
func minSet[T uint64 | time.Duration](a, b T) T {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// kubeShaper is the fields of a Config one bandwidth annotation sets:
// those of the flags whose Kube it is, by their Linux.Param, and the
// qdisc's, which the egress one sets to tbf.
type kubeShaper struct {
	rateFlag           *Flag // for notices
	rate, burst, limit *uint64
	latency            *time.Duration
	qdisc              *QueueingDiscipline // nil: the annotation selects none
}

// kubeShaperOf returns the fields of c that the bandwidth annotation key
// sets.
func (c *Config) kubeShaperOf(key string) kubeShaper {
	var s kubeShaper
	for i := range Flags {
		f := &Flags[i]
		if f.Kube != key {
			continue
		}
		switch p := f.field(c).(type) {
		case *QueueingDiscipline:
			s.qdisc = p
		case *time.Duration:
			s.latency = p
		case *uint64:
			switch f.Linux.Param {
			case "rate":
				s.rateFlag, s.rate = f, p
			case "burst":
				s.burst = p
			case "limit":
				s.limit = p
			}
		}
	}
	return s
}

// applyKube applies a bandwidth annotation of r bytes/s to c: the rate
// and burst become the smaller of theirs and the annotation's, the queue
// is bounded by KubeLatency (or the limit in force, if smaller; on egress
// under fq, the default child, by the tbf's default limit and fq's own
// unless a limit or latency is in force), and egress selects tbf. A rate above the operator's is a limit the ceiling
// already enforces, not a reservation to refuse: the pod gets the
// ceiling, and a notice (Notices) says so. With --allow-flag-override the
// annotation's values are set as they are.
func (c *Config) applyKube(op *Config, key, value string, r uint64) {
	d := EgressCeiling
	if key == AnnotationKubeIngress {
		d = IngressCeiling
	}
	if c.applyKubeNode(op, key, value, r) || c.applyKubeHTB(key, value, r) || c.applyKubeCake(key, r) || c.applyKubeKind(d, r) {
		return
	}
	s := c.kubeShaperOf(key)
	if s.qdisc != nil {
		*s.qdisc = QDiscOf(tbf.Kind)
	}
	if op.AllowFlagOverride { // as the annotation says, whatever is in force
		*s.rate, *s.burst, *s.limit, *s.latency = r, kubeBurst(r), 0, KubeLatency
		return
	}
	if ceiling := s.rateFlag.number(op); ceiling != 0 && r > ceiling {
		c.Notices = append(c.Notices, fmt.Sprintf("annotation %s=%q: %s is above the operator's ceiling --%s=%s; the pod gets the ceiling (a bandwidth annotation is a limit, not a reservation)", key, value, showRate(r), s.rateFlag.Name, showRate(ceiling)))
	}
	*s.rate = minSet(*s.rate, r)
	*s.burst = minSet(*s.burst, kubeBurst(r))
	if d == EgressCeiling && c.TBFChild == "" && *s.limit == 0 && *s.latency == 0 {
		// Under fq, the default child, there is no FIFO for the
		// plugin's 25 ms to bound: the tbf's default limit and fq's
		// own bound the queue, and a bulk flow's couple of packets
		// (TCP small queues) wait there, not a sparse flow's.
		return
	}
	if *s.limit != 0 {
		*s.limit = min(*s.limit, uint64(float64(*s.rate)*KubeLatency.Seconds())+*s.burst)
	} else {
		*s.latency = minSet(*s.latency, KubeLatency)
		c.holdKubeQueue(op, d, s)
	}
}

// holdKubeQueue holds the queue a bandwidth annotation gave direction d
// (KubeLatency at its rate) to the default queue where the operator left
// the queue unset: past about 350 Mbit/s, 25 ms is more than 1000
// full-size packets, and a pod's annotation only tightens. The latency
// becomes the longest within the default queue, or, where the burst alone
// is past it, the limit the default queue.
func (c *Config) holdKubeQueue(op *Config, d Ceiling, s kubeShaper) {
	q := queueFlagsOf(d)
	if q.limit.number(op) != 0 || q.latency.number(op) != 0 || q.bytesIn(c, *s.latency) <= DefaultQueueBytes {
		return
	}
	if most := q.latencyFor(c, DefaultQueueBytes); most > 0 {
		*s.latency = most
		return
	}
	*s.latency, *s.limit = 0, DefaultQueueBytes
}
