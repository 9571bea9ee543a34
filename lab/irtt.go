package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// irttPort is the port irtt's server listens on in the sandbox (irtt's
// own default).
const irttPort = 2112

// IrttResult is a MeasureSandboxIrtt window: irtt's round trips idle and
// under load, and what the peer's veth received meanwhile.
type IrttResult struct {
	// Idle and Loaded are the RTTs of the probes answered, without and
	// with the bulk load; Sent and Lost count the loaded probes.
	Idle, Loaded []time.Duration
	Sent, Lost   int
	// WireBps is the peer veth's received L2 bytes a second under load.
	WireBps float64
}

// LoadedAboveIdle is the q-quantile of the loaded RTTs less the idle
// median.
func (r IrttResult) LoadedAboveIdle(q float64) time.Duration {
	return measure.Quantile(r.Loaded, q) - measure.Quantile(r.Idle, 0.5)
}

// MeasureSandboxIrtt measures a sparse flow under load with irtt (the
// CAKE paper's probe): irtt's server runs in the sandbox s, its client on
// the peer, one probe every interval, first idle for a second, then while
// the sandbox sends o.Streams bulk TCP streams (iperf) to the peer,
// for o.Window after o.Warmup. Each probe's reply leaves the sandbox
// through its qdisc beside the bulk: its RTT is what the qdisc gives a
// sparse flow.
func (l *Lab) MeasureSandboxIrtt(s *Sandbox, interval time.Duration, o measure.Options) (IrttResult, error) {
	var r IrttResult
	if o.Streams < 1 || interval <= 0 || o.Window < interval {
		return r, fmt.Errorf("irtt: %d streams, a probe every %v over %v: want a stream or more and a window of a probe or more", o.Streams, interval, o.Window)
	}
	var sout strings.Builder
	srv, err := s.Exec(&sout, "irtt", "server", "-b", fmt.Sprintf(":%d", irttPort))
	if err != nil {
		return r, err
	}
	defer srv.Process.Kill()
	dir, err := os.MkdirTemp("", "irtt")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	// The server takes a moment to listen: the idle run retries.
	var idle irttRun
	for try := 0; ; try++ {
		idle, err = l.irttClient(filepath.Join(dir, "idle.json"), interval, time.Second)
		if err == nil && len(idle.rtts) > 0 {
			break
		}
		if try == 4 {
			return r, fmt.Errorf("irtt idle: no answer from the sandbox's irtt server (%v); it said: %s", err, sout.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.Idle = idle.rtts
	stop, err := l.startIperfServer()
	if err != nil {
		return r, err
	}
	defer stop()
	var cout strings.Builder
	cli, err := s.Exec(&cout, iperfArgs(PeerAddr, o)...)
	if err != nil {
		return r, err
	}
	defer cli.Process.Kill()
	time.Sleep(o.Warmup)
	b0, err := RxBytes(l.NSP, l.VethP1)
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	loaded, err := l.irttClient(filepath.Join(dir, "loaded.json"), interval, o.Window)
	if err != nil {
		return r, err
	}
	b1, err := RxBytes(l.NSP, l.VethP1)
	if err != nil {
		return r, err
	}
	r.WireBps = float64(b1-b0) / time.Since(t0).Seconds()
	r.Loaded, r.Sent, r.Lost = loaded.rtts, loaded.sent, loaded.lost
	if b1 == b0 {
		return r, fmt.Errorf("nothing reached the peer; iperf in the sandbox said: %s", cout.String())
	}
	return r, nil
}

// irttRun is one irtt client run: the RTTs of the probes answered, and
// the probes sent and lost.
type irttRun struct {
	rtts       []time.Duration
	sent, lost int
}

// irttClient runs irtt's client on the peer against the sandbox for d, a
// probe every interval, its JSON written to file and read back.
func (l *Lab) irttClient(file string, interval, d time.Duration) (irttRun, error) {
	var run irttRun
	if _, err := Run(l.NSP, "irtt", "client", "-Q", "-i", interval.String(), "-d", d.String(), "-o", file,
		fmt.Sprintf("%s:%d", NetstackAddr, irttPort)); err != nil {
		return run, err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return run, err
	}
	return parseIrtt(b)
}

// parseIrtt reads irtt's JSON output: each round trip's RTT (ns) unless
// it was lost (lost is "false" for an answered probe).
func parseIrtt(b []byte) (irttRun, error) {
	var run irttRun
	var out struct {
		RoundTrips []struct {
			Lost  string `json:"lost"`
			Delay struct {
				RTT int64 `json:"rtt"`
			} `json:"delay"`
		} `json:"round_trips"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return run, fmt.Errorf("irtt's JSON: %v", err)
	}
	for _, rt := range out.RoundTrips {
		run.sent++
		if rt.Lost != "false" {
			run.lost++
			continue
		}
		run.rtts = append(run.rtts, time.Duration(rt.Delay.RTT))
	}
	return run, nil
}
