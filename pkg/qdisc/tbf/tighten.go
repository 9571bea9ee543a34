package tbf

import (
	"math"
	"strconv"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Tighten returns pod, a tbf a container author asks for, if it holds
// every packet at least as tightly as operator, the operator's tbf: each
// rate and bucket no larger (a rate or packet rate the operator left
// unset the pod may add), the queue bounded the same way (limit or
// latency) and no longer, and each packet charged no less (overhead,
// mpu, linklayer atm). Otherwise a *ConfigError names the word and the
// operator's value. The operator's lanes, slack and child stay.
func (operator Config) Tighten(pod Config) (Config, error) {
	op := operator
	if err := atMost("rate", pod.Rate, op.Rate, rate.FormatRate); err != nil {
		return Config{}, err
	}
	if err := atMost("burst", uint64(pod.Burst), uint64(op.Burst), size); err != nil {
		return Config{}, err
	}
	if err := atMost("peakrate", pod.PeakRate, op.PeakRate, rate.FormatRate); err != nil {
		return Config{}, err
	}
	if err := atMost("mtu", uint64(pod.MTU), uint64(op.MTU), size); err != nil {
		return Config{}, err
	}
	if err := atMost("pkt_rate", pod.PacketRate, op.PacketRate, count); err != nil {
		return Config{}, err
	}
	if err := atMost("pkt_burst", uint64(pod.PacketBurst), uint64(op.PacketBurst), count); err != nil {
		return Config{}, err
	}
	if err := queueAtMost(op, pod); err != nil {
		return Config{}, err
	}
	switch {
	case pod.Overhead < op.Overhead:
		return Config{}, configErr("overhead", "overhead %d is below the operator's %d, which would charge packets less; give %d or more", pod.Overhead, op.Overhead, op.Overhead)
	case pod.MPU < op.MPU:
		return Config{}, configErr("mpu", "mpu %d is below the operator's %d; give %d or more", pod.MPU, op.MPU, op.MPU)
	case op.ATM && !pod.ATM:
		return Config{}, configErr("linklayer", "the operator charges ATM cells (linklayer atm), which ethernet would charge less; keep linklayer atm")
	}
	pod.Lanes, pod.Slack, pod.Child = op.Lanes, op.Slack, op.Child
	return pod, nil
}

// Fit returns c with its rate held to bandwidth bytes a second, as a
// Kubernetes bandwidth annotation asks; a rate already lower stays. A tbf
// that had only a packet rate gets a burst of FitBurst of the bandwidth
// (at least 64 KiB), as a byte rate needs one.
func (c Config) Fit(bandwidth uint64) Config {
	if c.Rate == 0 || c.Rate > bandwidth {
		c.Rate = bandwidth
	}
	if c.Burst == 0 {
		c.Burst = uint32(min(max(uint64(float64(c.Rate)*FitBurst.Seconds()), 64<<10), math.MaxUint32))
	}
	if c.PeakRate != 0 && c.PeakRate <= c.Rate {
		c.PeakRate, c.MTU = 0, 0 // a peak at or below the rate shapes nothing more
	}
	return c
}

// FitBurst is the time at its rate a burst Fit gives a tbf that had none
// holds: 25 ms, as runsc's Kubernetes bandwidth does.
const FitBurst = 25 * time.Millisecond

// defaultLimitBound is the most a tbf left at its default limit queues on
// a link of a 1500-byte MTU (DefaultLimitPackets frames of 1514 bytes):
// what a pod's queue is held to where the operator set no bound. A larger
// MTU's default is larger; the bound holds a pod to the smaller.
const defaultLimitBound = DefaultLimitPackets * 1514

// queueAtMost checks the pod's queue bound against the operator's: the
// same kind of bound (limit or latency), no larger; where the operator
// left the default, a limit no larger than defaultLimitBound.
func queueAtMost(op, pod Config) error {
	switch {
	case op.Latency != 0 && pod.Latency == 0:
		return configErr("latency", "the operator bounds the queue by latency %v; give latency %v or less", op.Latency, op.Latency)
	case op.Latency != 0 && pod.Latency > op.Latency:
		return configErr("latency", "latency %v is above the operator's %v; give %v or less", pod.Latency, op.Latency, op.Latency)
	case op.Latency != 0:
		return nil
	}
	bound, whose := uint64(op.Limit), "the operator's"
	if bound == 0 {
		bound, whose = defaultLimitBound, "the operator's default"
	}
	switch {
	case pod.Latency != 0:
		return configErr("latency", "the operator bounds the queue by its limit, not latency; give limit %s or less (%s)", size(bound), whose)
	case pod.Limit == 0 && op.Limit == 0:
		return nil // both the default
	case pod.Limit == 0:
		return configErr("limit", "the operator sets limit %s; give limit %s or less", size(bound), size(bound))
	case uint64(pod.Limit) > bound:
		return configErr("limit", "limit %s is above %s %s; give %s or less", size(uint64(pod.Limit)), whose, size(bound), size(bound))
	}
	return nil
}

// atMost checks a pod's value of the word named against the operator's:
// where the operator set one, the pod's must be set and no larger.
func atMost(word string, pod, op uint64, format func(uint64) string) error {
	switch {
	case op == 0:
		return nil
	case pod == 0:
		return configErr(word, "the operator sets %s %s; give %s %s or less", word, format(op), word, format(op))
	case pod > op:
		return configErr(word, "%s %s is above the operator's %s; give %s or less", word, format(pod), format(op), format(op))
	}
	return nil
}

// size and count print a value of bytes and of packets (or packets a
// second) for atMost.
func size(n uint64) string  { return rate.FormatSize(n) }
func count(n uint64) string { return strconv.FormatUint(n, 10) }
