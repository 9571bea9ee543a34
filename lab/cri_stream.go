package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// CRIStream is one TCP stream between a running pod and the CRI's
// namespace, measured by the sink at the receiving end, with the pod's IP
// pinged from the CRI's namespace meanwhile. The pod sends (egress): its
// container runs the image's /sender to the sink on the bridge
// (CRIGateway). The pod receives (Ingress): its container runs the image's
// /sink and the sender runs in the CRI's namespace, sending to the pod's
// IP. Either way the ping's echo replies come back from the pod: an egress
// shaper's queue shows in their RTT, an ingress shaper's in the requests'.
type CRIStream struct {
	// PodID is a running pod, Pod its configuration (RunPod's).
	PodID string
	Pod   *Pod
	// Ingress makes the pod the receiver.
	Ingress bool
	// For is how long the sender sends (at most 2 minutes).
	For time.Duration
	// SenderArgs are more of the sender's flags ("-sndbuf", "16384").
	SenderArgs []string
}

// CRIStreamResult is what the sink counted, the pod, the TCP segments the
// stream was carried in, and the pings sent while the stream ran (from
// its first byte to its end) and their answered RTTs.
type CRIStreamResult struct {
	SinkResult
	PodID string
	PodIP string
	// Segments is what the CRI namespace's kernel counted of the stream
	// (IpExt In*Pkts of what the pod sent, with the ping replies; Tcp
	// OutSegs of what it received): a GSO packet as the segments it stands
	// for, as a wire carries it.
	Segments   uint64
	RTTs       []time.Duration
	PingsSent  int
	SenderSaid string
}

// WireBps is the stream's rate from its first byte as a wire carries it,
// in bits/s: the payload and each segment's headers (Ethernet, IPv4, TCP
// with timestamps), as Linux's tbf (and the CNI bandwidth plugin) charge.
func (r CRIStreamResult) WireBps() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(uint64(r.Bytes)+r.Segments*gsoSegmentHeaders) * 8 / r.Seconds
}

// RTT is the q-th quantile of the RTTs (0 without any).
func (r CRIStreamResult) RTT(q float64) time.Duration { return measure.Quantile(r.RTTs, q) }

// FirstSecondBytes is what the sink read in the first second from the
// first byte: a shaper's initial burst shows here.
func (r SinkResult) FirstSecondBytes() int64 {
	if len(r.PerSecond) == 0 {
		return 0
	}
	return r.PerSecond[0]
}

// SteadyBps is the goodput (bits/s) from the from-th second after the first
// byte to the end: the rate once the initial burst has passed.
func (r SinkResult) SteadyBps(from int) float64 {
	if len(r.PerSecond) <= from || r.Seconds <= float64(from) {
		return 0
	}
	var b int64
	for _, n := range r.PerSecond[from:] {
		b += n
	}
	return float64(b) * 8 / (r.Seconds - float64(from))
}

const (
	// criSinkPort is where the sink listens: on the bridge, or in a pod.
	criSinkPort     = 5201
	criPingInterval = 100 * time.Millisecond
)

// Stream runs s and returns what was measured; the pod stays.
func (c *CRI) Stream(s CRIStream) (CRIStreamResult, error) {
	var r CRIStreamResult
	if s.For <= 0 || s.For > 2*time.Minute {
		return r, fmt.Errorf("a stream of %v: want (0, 2m]", s.For)
	}
	ip, err := c.PodIP(s.PodID)
	if err != nil {
		return r, err
	}
	r.PodID, r.PodIP = s.PodID, ip
	in0, out0, err := c.segments()
	if err != nil {
		return r, err
	}
	// Bounded: it outlasts the stream and the pod's start, and stop ends it.
	ping, err := c.startPing(ip, s.For+time.Minute)
	if err != nil {
		return r, err
	}
	if s.Ingress {
		r.SinkResult, r.SenderSaid, err = c.streamToPod(s, ip)
	} else {
		r.SinkResult, r.SenderSaid, err = c.streamFromPod(s)
	}
	replies := ping.stop()
	if err != nil {
		return r, err
	}
	in1, out1, err := c.segments()
	if err != nil {
		return r, err
	}
	// The stream is the namespace's only traffic but for the pings: the
	// segments it received are what the pod sent, those it sent what the
	// pod received.
	if r.Segments = in1 - in0; s.Ingress {
		r.Segments = out1 - out0
	}
	if r.Bytes == 0 || r.Error != "" {
		return r, fmt.Errorf("the sink counted %+v; the sender said %q", r.SinkResult, r.SenderSaid)
	}
	r.RTTs, r.PingsSent = pingsDuring(replies, r.First, r.First.Add(time.Duration(r.Seconds*float64(time.Second))))
	return r, nil
}

// streamFromPod: the pod's /sender to the sink on the bridge.
func (c *CRI) streamFromPod(s CRIStream) (SinkResult, string, error) {
	addr := fmt.Sprintf("%s:%d", CRIGateway, criSinkPort)
	sink, err := c.StartSink(addr, 1, s.For+time.Minute)
	if err != nil {
		return SinkResult{}, "", err
	}
	out, err := c.RunContainer(s.PodID, s.Pod, &Container{Name: "sender", Image: CRIImage, Command: []string{"/sender"},
		Args: append([]string{"-addr", addr, "-for", s.For.String()}, s.SenderArgs...)}, s.For+time.Minute)
	if err != nil {
		sink.cmd.Process.Kill()
		return SinkResult{}, out, err
	}
	rs, err := sink.Wait(30 * time.Second)
	if err != nil {
		return SinkResult{}, out, err
	}
	if len(rs) != 1 {
		return SinkResult{}, out, fmt.Errorf("the sink reported %d connections", len(rs))
	}
	return rs[0], strings.TrimSpace(out), nil
}

// streamToPod: the pod's /sink, cri/bin's sender in the CRI's namespace.
func (c *CRI) streamToPod(s CRIStream, ip string) (SinkResult, string, error) {
	sender, err := c.senderBinary()
	if err != nil {
		return SinkResult{}, "", err
	}
	// The container's log (containerd writes it as the sink does) says
	// when it listens; an earlier sink's in the pod goes first.
	logPath := filepath.Join(s.Pod.LogDirectory, "sink.log")
	os.Remove(logPath)
	type ran struct {
		out string
		err error
	}
	done := make(chan ran, 1)
	go func() {
		out, err := c.RunContainer(s.PodID, s.Pod, &Container{Name: "sink", Image: CRIImage, Command: []string{"/sink"},
			Args: []string{"-listen", fmt.Sprintf("0.0.0.0:%d", criSinkPort), "-conns", "1", "-timeout", (s.For + time.Minute).String()}}, s.For+2*time.Minute)
		done <- ran{out, err}
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "listening on") {
			break
		}
		select {
		case r := <-done:
			return SinkResult{}, "", fmt.Errorf("the pod's sink exited before it listened: %v: %s", r.err, r.out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return SinkResult{}, "", fmt.Errorf("the pod's sink did not listen within a minute (%s)", logPath)
		}
	}
	said, serr := RunBounded(c.InNS(append([]string{sender, "-addr", fmt.Sprintf("%s:%d", ip, criSinkPort), "-for", s.For.String()}, s.SenderArgs...)...), s.For+30*time.Second)
	var r ran
	select {
	case r = <-done:
	case <-time.After(s.For + 3*time.Minute): // RunContainer's own timeout ends it first
		return SinkResult{}, said, errors.New("the pod's sink did not exit")
	}
	if serr != nil {
		return SinkResult{}, said, fmt.Errorf("sender: %v; the pod's sink said %s", serr, r.out)
	}
	if r.err != nil {
		return SinkResult{}, said, r.err
	}
	for _, line := range strings.Split(r.out, "\n") {
		if strings.HasPrefix(line, "{") {
			var res SinkResult
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				return SinkResult{}, said, fmt.Errorf("the pod's sink said %q: %v", line, err)
			}
			return res, said, nil
		}
	}
	return SinkResult{}, said, fmt.Errorf("the pod's sink reported nothing: %s", r.out)
}

// senderBinary is the image's sender, built for the host: cri/build.sh
// builds it into cri/.build/image before packing the image (or cri/bin,
// should it put it there).
func (c *CRI) senderBinary() (string, error) {
	for _, p := range []string{filepath.Join(c.Bin, "sender"), filepath.Join(c.Bin, "..", ".build", "image", "sender")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no sender in %s or cri/.build/image: run cri/build.sh", c.Bin)
}

// RunBounded runs cmd for at most timeout and returns its output.
func RunBounded(cmd *exec.Cmd, timeout time.Duration) (string, error) {
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &syncWriter{b: &out}, &syncWriter{b: &out}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return "", err
	}
	t := time.AfterFunc(timeout, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	t.Stop()
	outMu.Lock()
	defer outMu.Unlock()
	return strings.TrimSpace(out.String()), err
}

// PodIP is the pod's IP on the bridge (PodSandboxStatus).
func (c *CRI) PodIP(id string) (string, error) {
	out, err := c.Client(30*time.Second, "inspectp", id)
	if err != nil {
		return "", err
	}
	var st struct {
		IP string `json:"ip"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.IP == "" {
		return "", fmt.Errorf("no IP for pod %s in %q (%v)", id, out, err)
	}
	return st.IP, nil
}

// segments reads the segments the CRI namespace's kernel received (IpExt
// In*Pkts: a GRO or GSO packet as the segments it stands for; pings
// included) and the TCP segments it sent (Tcp OutSegs, counted the same
// way).
func (c *CRI) segments() (in, out uint64, err error) {
	b, err := RunBounded(c.InNS("cat", "/proc/net/snmp", "/proc/net/netstat"), 10*time.Second)
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/net/snmp in %s: %v: %s", c.NS, err, b)
	}
	lines := strings.Split(b, "\n")
	if in, err = ipSegments(lines); err != nil {
		return 0, 0, err
	}
	for i := 0; i+1 < len(lines); i++ {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != "Tcp:" || len(values) != len(names) {
			continue
		}
		for k, n := range names {
			if n == "OutSegs" {
				out, err = strconv.ParseUint(values[k], 10, 64)
				return in, out, err
			}
		}
	}
	return 0, 0, fmt.Errorf("no Tcp OutSegs in %s's /proc/net/snmp", c.NS)
}

// A pinger is ping running in the CRI's namespace, every criPingInterval.
type pinger struct {
	cmd  *exec.Cmd
	out  strings.Builder
	done chan struct{}
}

func (c *CRI) startPing(addr string, max time.Duration) (*pinger, error) {
	p := &pinger{done: make(chan struct{})}
	// -D: each reply with the time it came (seconds since the epoch).
	p.cmd = c.InNS("ping", "-D", "-n", "-i", fmt.Sprintf("%.3f", criPingInterval.Seconds()), "-W", "2",
		"-c", strconv.Itoa(int(max/criPingInterval)), addr)
	p.cmd.Stdout, p.cmd.Stderr = &syncWriter{b: &p.out}, &syncWriter{b: &p.out}
	p.cmd.WaitDelay = 2 * time.Second
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	c.lab.mu.Lock()
	c.lab.procs = append(c.lab.procs, p.cmd) // killed at Close, should stop not come
	c.lab.mu.Unlock()
	return p, nil
}

type pingReply struct {
	seq      int
	received time.Time
	rtt      time.Duration
}

var pingReplyLine = regexp.MustCompile(`(?m)^\[(\d+)\.(\d+)\] .* icmp_seq=(\d+) .*time=([0-9.]+) ms`)

// stop interrupts ping (nsenter execs it: the PID is ping's) and returns
// its replies.
func (p *pinger) stop() []pingReply {
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	outMu.Lock()
	out := p.out.String()
	outMu.Unlock()
	var rs []pingReply
	for _, m := range pingReplyLine.FindAllStringSubmatch(out, -1) {
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		usec, _ := strconv.ParseInt((m[2] + "000000")[:6], 10, 64)
		seq, _ := strconv.Atoi(m[3])
		ms, _ := strconv.ParseFloat(m[4], 64)
		rs = append(rs, pingReply{seq: seq, received: time.Unix(sec, usec*1000), rtt: time.Duration(ms * float64(time.Millisecond))})
	}
	return rs
}

// pingsDuring returns the RTTs of the pings sent between from and to, and
// how many were sent then: the sequence numbers' span (a ping lost at
// either end of the span is not counted).
func pingsDuring(rs []pingReply, from, to time.Time) ([]time.Duration, int) {
	var rtts []time.Duration
	lo, hi := -1, -1
	for _, r := range rs {
		if sent := r.received.Add(-r.rtt); sent.Before(from) || sent.After(to) {
			continue
		}
		rtts = append(rtts, r.rtt)
		if lo < 0 || r.seq < lo {
			lo = r.seq
		}
		if r.seq > hi {
			hi = r.seq
		}
	}
	if lo < 0 {
		return nil, 0
	}
	return rtts, hi - lo + 1
}
