// Command sender is the test image's load: it connects over TCP and writes
// for a fixed time (and at most a fixed number of bytes), then closes and
// prints what it wrote. It is static and needs nothing from the image.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	addr := flag.String("addr", "", "host:port to send to")
	dur := flag.Duration("for", 8*time.Second, "how long to send (at most 10m)")
	maxBytes := flag.Int64("max-bytes", 4<<30, "stop after this many bytes")
	dialTimeout := flag.Duration("dial-timeout", 10*time.Second, "give up connecting after this long")
	sndbuf := flag.Int("sndbuf", 0, "the socket's send buffer (SO_SNDBUF), if not 0")
	flag.Parse()
	if *addr == "" || *dur <= 0 || *dur > 10*time.Minute || *maxBytes <= 0 {
		fmt.Fprintln(os.Stderr, "usage: sender -addr host:port [-for 8s] [-max-bytes N]")
		os.Exit(2)
	}
	c, err := net.DialTimeout("tcp", *addr, *dialTimeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sender:", err)
		os.Exit(1)
	}
	if *sndbuf > 0 {
		if err := c.(*net.TCPConn).SetWriteBuffer(*sndbuf); err != nil {
			fmt.Fprintln(os.Stderr, "sender: SO_SNDBUF:", err)
			os.Exit(1)
		}
	}
	buf := make([]byte, 64<<10)
	start := time.Now()
	end := start.Add(*dur)
	// Writes block while the shaper holds the queue: the deadline ends the
	// last one at the end of the window.
	c.SetWriteDeadline(end)
	var sent int64
	for sent < *maxBytes && time.Now().Before(end) {
		n := len(buf)
		if rest := *maxBytes - sent; rest < int64(n) {
			n = int(rest)
		}
		w, err := c.Write(buf[:n])
		sent += int64(w)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				break
			}
			fmt.Fprintf(os.Stderr, "sender: after %d bytes: %v\n", sent, err)
			os.Exit(1)
		}
	}
	elapsed := time.Since(start)
	if err := c.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "sender: close:", err)
		os.Exit(1)
	}
	fmt.Printf("sent %d bytes in %.3f s: %.3f Mbit/s written\n", sent, elapsed.Seconds(), float64(sent)*8/elapsed.Seconds()/1e6)
}
