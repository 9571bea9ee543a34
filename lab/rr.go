package lab

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// rrPort is where the sandbox's echo server listens for the TCP
// request/response probe.
const rrPort = 7007

// rrSize is the probe's request and response, in bytes.
const rrSize = 64

// startEcho starts an echo server in the sandbox (socat, which echoes
// each connection through a pipe of its own, with no other process) and
// returns its stop.
func startEcho(s *Sandbox) (func(), error) {
	var out strings.Builder
	srv, err := s.Exec(&out, "socat", fmt.Sprintf("TCP-LISTEN:%d,reuseaddr,fork", rrPort), "PIPE")
	if err != nil {
		return nil, err
	}
	return func() { srv.Process.Kill(); srv.Wait() }, nil
}

// connectIn connects to addr (IPv4) from network namespace ns: the socket
// is made on a thread in ns (a socket stays in the namespace it was made
// in), and used from any thread thereafter.
func connectIn(ns, addr string, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := onNSThread([]string{ns}, func(enter func(i int) error) error {
		if err := enter(0); err != nil {
			return err
		}
		var err error
		c, err = net.DialTimeout("tcp4", addr, timeout)
		return err
	})
	return c, err
}

// rrProbe is a TCP request/response probe on one connection.
type rrProbe struct {
	c   net.Conn
	buf [rrSize]byte
}

// dialRR connects the probe from ns to the sandbox's echo server at
// target, trying for up to 5 s while the server starts.
func dialRR(ns, target string) (*rrProbe, error) {
	addr := net.JoinHostPort(target, fmt.Sprint(rrPort))
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var c net.Conn
		if c, err = connectIn(ns, addr, time.Second); err == nil {
			p := &rrProbe{c: c}
			if _, err = p.once(); err == nil {
				return p, nil
			}
			c.Close()
		}
	}
	return nil, fmt.Errorf("the TCP request/response probe to %s: %v", addr, err)
}

// once sends a request and reads the response, returning the round trip.
func (p *rrProbe) once() (time.Duration, error) {
	p.c.SetDeadline(time.Now().Add(5 * time.Second))
	t0 := time.Now()
	if _, err := p.c.Write(p.buf[:]); err != nil {
		return 0, err
	}
	if _, err := io.ReadFull(p.c, p.buf[:]); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// run probes every interval, n times, and returns the round trips.
func (p *rrProbe) run(n int, interval time.Duration) ([]time.Duration, error) {
	rtts := make([]time.Duration, 0, n)
	next := time.Now()
	for range n {
		d, err := p.once()
		if err != nil {
			return rtts, err
		}
		rtts = append(rtts, d)
		next = next.Add(interval)
		time.Sleep(time.Until(next))
	}
	return rtts, nil
}

// rrDuring runs the probe over o's window in the background; wait
// returns its round trips.
func rrDuring(p *rrProbe, warmup, window, interval time.Duration) (wait func() ([]time.Duration, error)) {
	var wg sync.WaitGroup
	var rtts []time.Duration
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(warmup)
		rtts, err = p.run(int(window/interval), interval)
	}()
	return func() ([]time.Duration, error) {
		wg.Wait()
		return rtts, err
	}
}
