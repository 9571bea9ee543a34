package lab

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// RRULOptions shape a realtime-response-under-load run (Flent's RRUL, as
// seed 002 shows it): pings throughout, and bulk TCP streams both ways
// between an idle period before and after.
type RRULOptions struct {
	// Streams is the bulk TCP streams each way (RRUL's 4).
	Streams int
	// Idle is the time of pings alone before the load and after it.
	Idle time.Duration
	// Load is how long the streams run.
	Load time.Duration
	// PingInterval is how often the peer pings the sandbox.
	PingInterval time.Duration
	// Sample is the period over which each stream's goodput is read.
	Sample time.Duration
}

// RRULPing is one answered ping of an RRUL run: when it was sent, from
// the run's start, and its round trip.
type RRULPing struct {
	At, RTT time.Duration
}

// RRULResult is what an RRUL run measured at the kernel peer.
type RRULResult struct {
	Options RRULOptions
	// Up and Down are each stream's goodput in bits/s, sample by sample
	// from the load's start: up, what the peer's TCP received from the
	// sandbox; down, what the sandbox's TCP acknowledged of the peer's.
	Up, Down [][]float64
	// Pings are the answered pings; PingsSent how many were sent.
	Pings     []RRULPing
	PingsSent int
}

// IdleRTT is the median RTT of the pings before the load.
func (r RRULResult) IdleRTT() time.Duration {
	return measure.Quantile(r.rtts(0, r.Options.Idle), 0.5)
}

// LoadedRTTs are the RTTs of the pings sent under the load, after its
// first second (the streams' slow start).
func (r RRULResult) LoadedRTTs() []time.Duration {
	return r.rtts(r.Options.Idle+time.Second, r.Options.Idle+r.Options.Load)
}

func (r RRULResult) rtts(from, to time.Duration) []time.Duration {
	var out []time.Duration
	for _, p := range r.Pings {
		if p.At >= from && p.At < to {
			out = append(out, p.RTT)
		}
	}
	return out
}

// Goodputs is each stream's mean goodput in bits/s over the load, after
// its first second.
func (r RRULResult) Goodputs(streams [][]float64) []float64 {
	skip := int(time.Second / r.Options.Sample)
	out := make([]float64, len(streams))
	for i, s := range streams {
		var sum float64
		n := 0
		for _, v := range s[min(skip, len(s)):] {
			sum += v
			n++
		}
		if n > 0 {
			out[i] = sum / float64(n)
		}
	}
	return out
}

// RRUL ports: the peer's server for the upload, the sandbox's for the
// download.
const (
	rrulUpPort   = 5011
	rrulDownPort = 5012
)

// MeasureSandboxRRUL runs RRUL between sandbox s and the kernel peer:
// the peer pings s every o.PingInterval for o.Idle, o.Load and o.Idle;
// during the load, iperf in s sends o.Streams streams to the peer and iperf
// on the peer sends o.Streams to s. Each stream's goodput is read from the
// peer's TCP (ss: bytes received, bytes acknowledged), so the figures are
// what reached the other end.
func (l *Lab) MeasureSandboxRRUL(s *Sandbox, o RRULOptions) (RRULResult, error) {
	r := RRULResult{Options: o}
	if o.Streams <= 0 || o.Idle <= 0 || o.Load < 2*time.Second || o.PingInterval <= 0 || o.Sample <= 0 {
		return r, fmt.Errorf("rrul: want streams, idle, ping interval and sample above 0 and a load of at least 2 s; got %+v", o)
	}
	stopUp, err := l.startIperfServerIn(l.NSP, rrulUpPort)
	if err != nil {
		return r, err
	}
	defer stopUp()
	var sout strings.Builder
	stopDown, err := s.startIperfServer(rrulDownPort, &sout)
	if err != nil {
		return r, err
	}
	defer stopDown()

	total := 2*o.Idle + o.Load
	var pout strings.Builder
	start := time.Now()
	pinger, err := l.Start(l.NSP, &pout, "ping", "-n", "-D", "-i", fmt.Sprintf("%.3f", o.PingInterval.Seconds()), "-w", fmt.Sprint(int(total.Seconds()+0.999)), NetstackAddr)
	if err != nil {
		return r, err
	}
	defer pinger.Process.Kill()
	time.Sleep(o.Idle)

	secs := fmt.Sprint(int(o.Load.Seconds()))
	var uout, dout strings.Builder
	upc, err := s.Exec(&uout, "iperf", "-c", PeerAddr, "-p", fmt.Sprint(rrulUpPort), "-P", fmt.Sprint(o.Streams), "-t", secs)
	if err != nil {
		return r, err
	}
	defer upc.Process.Kill()
	downc, err := l.Start(l.NSP, &dout, "iperf", "-c", NetstackAddr, "-p", fmt.Sprint(rrulDownPort), "-P", fmt.Sprint(o.Streams), "-t", secs)
	if err != nil {
		return r, err
	}
	defer downc.Process.Kill()

	// Each sample reads every stream's count at the peer; a stream is
	// known by its port at the sandbox's end.
	loadStart := time.Now()
	var ups, downs []map[int]uint64
	for i := 1; time.Duration(i)*o.Sample <= o.Load; i++ {
		time.Sleep(time.Until(loadStart.Add(time.Duration(i) * o.Sample)))
		u, d, err := l.rrulCounts()
		if err != nil {
			return r, err
		}
		ups, downs = append(ups, u), append(downs, d)
	}
	r.Up = rrulRates(ups, o.Sample)
	r.Down = rrulRates(downs, o.Sample)
	if len(r.Up) != o.Streams || len(r.Down) != o.Streams {
		return r, fmt.Errorf("rrul: %d streams up and %d down seen at the peer, want %d each; iperf in the sandbox said %q, on the peer %q", len(r.Up), len(r.Down), o.Streams, uout.String(), dout.String())
	}

	pinger.Wait()
	if r.Pings, r.PingsSent, err = parseTimedPings(pout.String(), start); err != nil {
		return r, err
	}
	return r, nil
}

// rrulCounts reads the peer's TCP connections of an RRUL run: the bytes
// each upload stream's receiver took and each download stream's sender had
// acknowledged, each by the port of its end that is not the server.
func (l *Lab) rrulCounts() (up, down map[int]uint64, err error) {
	out, err := Run(l.NSP, "ss", "-tinH", "state", "established")
	if err != nil {
		return nil, nil, fmt.Errorf("ss -tin: %v: %s", err, out)
	}
	up, down = map[int]uint64{}, map[int]uint64{}
	lines := strings.Split(out, "\n")
	for i := 0; i+1 < len(lines); i++ {
		f := strings.Fields(lines[i])
		if len(f) < 4 || !strings.HasPrefix(lines[i+1], "\t") {
			continue
		}
		local, peer := portOf(f[2]), portOf(f[3])
		info := lines[i+1]
		i++
		switch {
		case local == rrulUpPort:
			if n, ok := ssCounter(info, "bytes_received"); ok {
				up[peer] = n
			}
		case peer == rrulDownPort:
			if n, ok := ssCounter(info, "bytes_acked"); ok {
				down[local] = n
			}
		}
	}
	return up, down, nil
}

// portOf is the port of an ss address, host:port.
func portOf(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return 0
	}
	p, _ := strconv.Atoi(addr[i+1:])
	return p
}

// ssCounter reads name:value from ss -i's information line.
func ssCounter(info, name string) (uint64, bool) {
	i := strings.Index(info, " "+name+":")
	if i < 0 {
		return 0, false
	}
	v := info[i+len(name)+2:]
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}

// rrulRates turns the samples' cumulative counts into each stream's rate
// in bits/s over each sample (the first from 0), streams ordered by
// port. A stream not yet seen in a sample counts 0 there.
func rrulRates(samples []map[int]uint64, sample time.Duration) [][]float64 {
	seen := map[int]bool{}
	for _, s := range samples {
		for p := range s {
			seen[p] = true
		}
	}
	ports := make([]int, 0, len(seen))
	for p := range seen {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	out := make([][]float64, len(ports))
	for i, p := range ports {
		var last uint64
		for _, s := range samples {
			n, ok := s[p]
			if !ok || n < last { // gone (closed): no more bytes
				n = last
			}
			out[i] = append(out[i], float64(n-last)*8/sample.Seconds())
			last = n
		}
	}
	return out
}

// timedPing is a ping -D line: the Unix time it was answered at, and
// its RTT.
var timedPing = regexp.MustCompile(`(?m)^\[(\d+\.\d+)\] .*time=([0-9.]+) ms`)

// parseTimedPings reads ping -D's output: each answered ping, sent at its
// answer's time less its RTT, from start; and the pings sent.
func parseTimedPings(out string, start time.Time) ([]RRULPing, int, error) {
	var pings []RRULPing
	for _, m := range timedPing.FindAllStringSubmatch(out, -1) {
		at, err1 := strconv.ParseFloat(m[1], 64)
		ms, err2 := strconv.ParseFloat(m[2], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		rtt := time.Duration(ms * float64(time.Millisecond))
		answered := time.Unix(0, int64(at*1e9))
		pings = append(pings, RRULPing{At: answered.Sub(start) - rtt, RTT: rtt})
	}
	m := pingSent.FindStringSubmatch(out)
	if m == nil {
		return nil, 0, fmt.Errorf("ping: no summary: %s", LastLines(out, 5))
	}
	sent, _ := strconv.Atoi(m[1])
	return pings, sent, nil
}
