// Command sequdp sends and receives numbered UDP datagrams, to check that
// a path neither reorders nor loses them beyond what a qdisc counts as
// dropped (e2e's TestLive*), or loses, duplicates and reorders them as a
// netem is told to (TestRunscNetem*).
//
//	sequdp send -to 10.0.0.1:9000 -pps 2000 -size 1000 -for 3s
//	sequdp recv -port 9000 -for 5s [-early 25ms] [-block 1000]
//
// Each prints one JSON line when it is done: the sender what it sent and
// how many sends failed, the receiver what it received, how many arrived
// after a higher number (reordered) or twice, and the highest number;
// with -early, how many took less than that from send to receipt (each
// datagram carries its send time: sender and receiver share the host's
// clock); with -block, how many of each block of that many numbers
// arrived (where a change mid-flow took effect).
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sequdp send|recv [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	to := fs.String("to", "", "send: the receiver's address:port")
	port := fs.Int("port", 9000, "recv: the port to listen on")
	pps := fs.Int("pps", 1000, "send: datagrams a second")
	size := fs.Int("size", 1000, "send: payload bytes (at least 16)")
	dur := fs.Duration("for", 3*time.Second, "how long to send, or to listen")
	early := fs.Duration("early", 0, "recv: count datagrams that took less than this to arrive")
	block := fs.Uint64("block", 0, "recv: count arrivals per block of this many numbers")
	fs.Parse(os.Args[2:])
	var out any
	var err error
	switch os.Args[1] {
	case "send":
		out, err = send(*to, *pps, max(*size, 16), *dur)
	case "recv":
		out, err = recv(*port, *dur, *early, *block)
	default:
		err = fmt.Errorf("unknown verb %q: send or recv", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sequdp:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

// sent is what send reports.
type sent struct {
	Sent   uint64 `json:"sent"`
	Errors uint64 `json:"errors"`
}

// send sends datagrams numbered from 1 at pps a second for dur (as fast
// as it can, if that is slower), and stops when dur is up.
func send(to string, pps, size int, dur time.Duration) (sent, error) {
	var s sent
	conn, err := net.Dial("udp", to)
	if err != nil {
		return s, err
	}
	defer conn.Close()
	buf := make([]byte, size)
	start := time.Now()
	total := uint64(float64(pps) * dur.Seconds())
	for n := uint64(1); n <= total && time.Since(start) < dur; n++ {
		if due := start.Add(time.Duration(float64(n-1) / float64(pps) * float64(time.Second))); time.Until(due) > 0 {
			time.Sleep(time.Until(due))
		}
		binary.BigEndian.PutUint64(buf, n)
		binary.BigEndian.PutUint64(buf[8:], uint64(time.Now().UnixNano()))
		s.Sent++
		if _, err := conn.Write(buf); err != nil {
			s.Errors++
		}
	}
	return s, nil
}

// received is what recv reports.
type received struct {
	Received   uint64 `json:"received"`
	Reordered  uint64 `json:"reordered"`
	Duplicates uint64 `json:"duplicates"`
	Highest    uint64 `json:"highest"`
	// Early counts datagrams that arrived sooner than -early after they
	// were sent; Blocks[i] those numbered i*block+1 to (i+1)*block.
	Early  uint64   `json:"early"`
	Blocks []uint64 `json:"blocks,omitempty"`
}

// recv counts the datagrams that arrive on port within dur: those that
// arrived sooner than early after they were sent, and, if block is not
// 0, how many of each block of numbers.
func recv(port int, dur, early time.Duration, block uint64) (received, error) {
	var r received
	conn, err := net.ListenUDP("udp", &net.UDPAddr{Port: port})
	if err != nil {
		return r, err
	}
	defer conn.Close()
	// A burst (netem's jitter lets its held packets go together) must not
	// overflow the socket while the receiver is off the CPU: the receiver
	// runs as root, which may pass net.core.rmem_max.
	if rc, err := conn.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 32<<20)
		})
	}
	seen := map[uint64]bool{}
	buf := make([]byte, 65536)
	conn.SetReadDeadline(time.Now().Add(dur))
	for {
		n, err := conn.Read(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return r, nil
		}
		if err != nil {
			return r, err
		}
		now := time.Now().UnixNano()
		if n < 16 {
			continue
		}
		seq := binary.BigEndian.Uint64(buf)
		switch {
		case seen[seq]:
			r.Duplicates++
			continue
		case seq < r.Highest:
			r.Reordered++
		}
		seen[seq] = true
		r.Received++
		if took := now - int64(binary.BigEndian.Uint64(buf[8:])); took < int64(early) {
			r.Early++
		}
		if block != 0 && seq > 0 && seq <= 1<<24 {
			i := (seq - 1) / block
			for uint64(len(r.Blocks)) <= i {
				r.Blocks = append(r.Blocks, 0)
			}
			r.Blocks[i]++
		}
		r.Highest = max(r.Highest, seq)
	}
}
