package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SinkResult is what the sink reports for one connection: Bytes of TCP
// payload, Seconds from the first byte to the end of the stream,
// GoodputBps, their quotient in bits/s, the bytes of each second from the
// first byte, and the longest stall.
type SinkResult struct {
	Remote     string  `json:"remote"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	GoodputBps float64 `json:"goodput_bps"`
	// First is the wall-clock time of the first byte; PerSecond the bytes
	// of each second from it (the last partial).
	First     time.Time `json:"first"`
	PerSecond []int64   `json:"per_second"`
	// MaxGapSeconds is the longest wait between two reads with data.
	MaxGapSeconds float64 `json:"max_gap_seconds"`
	Error         string  `json:"error"`
}

// Sink is cri/bin/sink running in the CRI's namespace.
type Sink struct {
	cmd  *exec.Cmd
	out  strings.Builder
	errs strings.Builder
	done chan error
}

// StartSink starts the sink in the CRI's namespace, listening on addr
// (CRIGateway:port: on the bridge), for at most conns connections and
// timeout in all; it returns once the sink listens.
func (c *CRI) StartSink(addr string, conns int, timeout time.Duration) (*Sink, error) {
	return startSink(c.lab, c.NSPath, c.Bin, addr, conns, timeout)
}

// startSink starts bin/sink in the network namespace at nsPath (nsenter
// --net), one of lab's processes, and returns once it listens on addr.
func startSink(lab *Lab, nsPath, bin, addr string, conns int, timeout time.Duration) (*Sink, error) {
	s := &Sink{done: make(chan error, 1)}
	s.cmd = exec.Command("nsenter", "--net="+nsPath, filepath.Join(bin, "sink"), "-listen", addr, "-conns", strconv.Itoa(conns), "-timeout", timeout.String())
	s.cmd.Stdout, s.cmd.Stderr = &syncWriter{b: &s.out}, &syncWriter{b: &s.errs}
	s.cmd.WaitDelay = 2 * time.Second
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.done <- s.cmd.Wait() }()
	lab.mu.Lock()
	lab.procs = append(lab.procs, s.cmd)
	lab.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		outMu.Lock()
		said := s.errs.String()
		outMu.Unlock()
		if strings.Contains(said, "listening on") {
			return s, nil
		}
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("sink: %v: %s", err, said)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.cmd.Process.Kill()
			return nil, fmt.Errorf("the sink did not listen on %s within 10s: %s", addr, said)
		}
	}
}

// Wait waits (at most timeout) for the sink to exit and returns its
// results, one per connection.
func (s *Sink) Wait(timeout time.Duration) ([]SinkResult, error) {
	select {
	case err := <-s.done:
		outMu.Lock()
		out, said := s.out.String(), s.errs.String()
		outMu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("sink: %v: %s", err, said)
		}
		var rs []SinkResult
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var r SinkResult
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return nil, fmt.Errorf("sink said %q: %v", line, err)
			}
			rs = append(rs, r)
		}
		return rs, nil
	case <-time.After(timeout):
		s.cmd.Process.Kill()
		return nil, fmt.Errorf("the sink did not finish within %v", timeout)
	}
}

// Kill kills the sink and waits until it has exited, leaving its results
// unread.
func (s *Sink) Kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// RunscLog returns the runsc logs of a pod sandbox (runsc --debug-log,
// under Dir/logs/HANDLER/ID/) whose file name contains kind ("boot",
// "create"), concatenated.
func (c *CRI) RunscLog(handler, podID, kind string) (string, error) {
	m, err := filepath.Glob(filepath.Join(c.Dir, "logs", handler, podID, "*"+kind+"*"))
	if err != nil || len(m) == 0 {
		return "", fmt.Errorf("no runsc %s log for %s under %s", kind, podID, filepath.Join(c.Dir, "logs", handler))
	}
	var b strings.Builder
	for _, f := range m {
		s, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		b.Write(s)
	}
	return b.String(), nil
}

// Log returns the last n lines of containerd's log.
func (c *CRI) Log(n int) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "containerd.log"))
	return LastLines(string(b), n)
}
