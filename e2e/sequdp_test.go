package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
)

// seqUDP is one run of testdata/sequdp: numbered datagrams from a
// sandbox to the peer, PPS a second of Size bytes for For.
type seqUDP struct {
	PPS, Size int
	For       time.Duration
	// Early, if not 0, counts the datagrams that took less than it from
	// the sandbox to the peer (netem's reorder sends them ahead).
	Early time.Duration
	// Block, if not 0, counts arrivals per block of that many numbers.
	Block uint64
	// During, if set, runs as the datagrams flow (a change mid-flow).
	During func()
}

// seqSent is what sequdp's sender reports.
type seqSent struct{ Sent, Errors uint64 }

// seqReceived is what sequdp's receiver reports.
type seqReceived struct {
	Received, Reordered, Duplicates, Highest, Early uint64
	Blocks                                          []uint64
}

// run sends o's datagrams from s to the peer's port and returns what each
// end reported; the receiver listens 1.5 s past the sender's end.
func (o seqUDP) run(t *testing.T, r *runscRig, s *lab.Sandbox, bin string, port int) (seqSent, seqReceived) {
	t.Helper()
	var recvOut, sendOut strings.Builder
	args := []string{bin, "recv", "-port", fmt.Sprint(port), "-for", (o.For + 1500*time.Millisecond).String(),
		"-early", o.Early.String(), "-block", fmt.Sprint(o.Block)}
	recv, err := r.Start(r.NSP, &recvOut, args...)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the receiver binds
	send, err := s.Exec(&sendOut, bin, "send", "-to", fmt.Sprintf("%s:%d", lab.PeerAddr, port),
		"-pps", fmt.Sprint(o.PPS), "-size", fmt.Sprint(o.Size), "-for", o.For.String())
	if err != nil {
		recv.Process.Kill()
		recv.Wait()
		t.Fatal(err)
	}
	if o.During != nil {
		o.During()
	}
	if err := send.Wait(); err != nil {
		t.Fatalf("sequdp send: %v: %s", err, sendOut.String())
	}
	if err := recv.Wait(); err != nil {
		t.Fatalf("sequdp recv: %v: %s", err, recvOut.String())
	}
	var sent seqSent
	var got seqReceived
	if err := json.Unmarshal([]byte(sendOut.String()), &sent); err != nil {
		t.Fatalf("sequdp send said %q: %v", sendOut.String(), err)
	}
	if err := json.Unmarshal([]byte(recvOut.String()), &got); err != nil {
		t.Fatalf("sequdp recv said %q: %v", recvOut.String(), err)
	}
	return sent, got
}
