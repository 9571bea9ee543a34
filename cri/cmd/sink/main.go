// Command sink accepts TCP connections and counts what each carries,
// printing one JSON line per connection when it closes: its bytes, the
// time from its first byte to its end (the sender's close), the goodput
// over that time, and the bytes of each second from the first byte (a
// shaper's initial burst shows in the first). It accepts at most -conns
// connections and exits after them, or after -timeout in all.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// Result is what sink prints for one connection.
type Result struct {
	Remote string `json:"remote"`
	Bytes  int64  `json:"bytes"`
	// First is when the first byte was read (wall clock): a test lines up
	// what it measured meanwhile (pings) with the stream.
	First time.Time `json:"first"`
	// PerSecond are the bytes read in each second from the first byte;
	// the last second is partial.
	PerSecond []int64 `json:"per_second"`
	// Seconds is from the first byte read to the end of the stream.
	Seconds float64 `json:"seconds"`
	// GoodputBps is Bytes*8/Seconds: TCP payload bits per second.
	GoodputBps float64 `json:"goodput_bps"`
	// MaxGapSeconds is the longest time between two reads that returned
	// data: a stalled transfer shows here.
	MaxGapSeconds float64 `json:"max_gap_seconds"`
	Error         string  `json:"error,omitempty"`
}

func main() {
	listen := flag.String("listen", "", "address to listen on (host:port)")
	conns := flag.Int("conns", 1, "connections to accept before exiting")
	timeout := flag.Duration("timeout", 2*time.Minute, "exit after this long in all (at most 30m)")
	flag.Parse()
	if *listen == "" || *conns < 1 || *timeout <= 0 || *timeout > 30*time.Minute {
		fmt.Fprintln(os.Stderr, "usage: sink -listen host:port [-conns 1] [-timeout 2m]")
		os.Exit(2)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "sink: listening on %s\n", l.Addr())
	deadline := time.Now().Add(*timeout)
	l.(*net.TCPListener).SetDeadline(deadline)
	enc := json.NewEncoder(os.Stdout)
	for i := 0; i < *conns; i++ {
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "sink:", err)
			os.Exit(1)
		}
		c.SetReadDeadline(deadline)
		enc.Encode(count(c))
		c.Close()
	}
}

// count reads c to its end.
func count(c net.Conn) Result {
	r := Result{Remote: c.RemoteAddr().String()}
	buf := make([]byte, 256<<10)
	var first, last time.Time
	for {
		n, err := c.Read(buf)
		if n > 0 {
			now := time.Now()
			if r.Bytes == 0 {
				first, r.First = now, now
			} else if gap := now.Sub(last).Seconds(); gap > r.MaxGapSeconds {
				r.MaxGapSeconds = gap
			}
			last = now
			sec := int(now.Sub(first) / time.Second)
			for len(r.PerSecond) <= sec {
				r.PerSecond = append(r.PerSecond, 0)
			}
			r.PerSecond[sec] += int64(n)
		}
		r.Bytes += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			r.Error = err.Error()
			break
		}
	}
	if r.Bytes > 0 {
		r.Seconds = time.Since(first).Seconds()
		if r.Seconds > 0 {
			r.GoodputBps = float64(r.Bytes) * 8 / r.Seconds
		}
	}
	return r
}
