// Package lab is the real-peer lab: it puts a gVisor netstack with a
// netqdisc qdisc (or a runsc sandbox, or a pod through containerd's CRI or
// Docker) on a real veth in a network namespace and measures it with
// programs nobody here wrote: the Linux kernel's TCP, iperf, ping and tc,
// with the kernel's own sch_tbf on an identical veth as the control. It is
// a package of its own, apart from the tests, because two use it: the
// real-peer tests (e2e/) and qdiscbench's --netns, --runsc, --ingress and
// --cri tables. Its runs are shaped by measure.Options and report a
// measure.Result, as the in-process benchmarks' are.
//
// A Lab is three network namespaces made for one run, with unique names,
// and two veth pairs:
//
//	netstack (in this process, AF_PACKET on vethN in nsN)  10.77.0.1
//	  vethN ─── vethP1   nsP, the peer: kernel TCP, iperf, ping  10.77.0.2
//	                     vethP2                                  10.78.0.2
//	  nsK, kernel sender with tc tbf on vethK ─── vethP2          10.78.0.1
//
// The addresses exist only inside the namespaces the Lab made; nothing is
// sent anywhere else. The kernel address is never put on vethN and IPv6 is
// off in nsN, or the kernel there would answer ARP and reset the netstack's
// connections; the netstack skips checksum checks on receive (the kernel
// peer sends partial checksums on a veth); GSO and TSO are off on vethP1 so
// the kernel sends the netstack MTU-sized frames. Close removes everything;
// Sweep removes what an interrupted run left.
//
// It needs root, iproute2 (ip, tc), iperf, ping, ethtool and socat; Check
// says what is missing.
package lab

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netqdisc/netqdisc/runsc-flags"
)

// Prefix starts the name of everything a Lab makes.
const Prefix = "nqe2e"

// Addresses of the Lab's hosts.
const (
	NetstackAddr   = "10.77.0.1"
	PeerAddr       = "10.77.0.2"
	PeerKernelAddr = "10.78.0.2"
	KernelAddr     = "10.78.0.1"
)

// Tools are the commands a Lab runs.
var Tools = []string{"ip", "tc", "iperf", "ping", "ethtool", "socat", "sha256sum"}

// Check reports why a Lab cannot be made here, or nil.
func Check() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root to make network namespaces")
	}
	var missing []string
	for _, t := range Tools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s (apt-get install iproute2 iperf iputils-ping ethtool socat coreutils)", strings.Join(missing, ", "))
	}
	return nil
}

// Lab is one run's namespaces and veths.
type Lab struct {
	// NSN, NSP and NSK are the namespaces of the netstack's veth, the peer
	// and the kernel sender. (One field a line: gVisor's checklocks maps
	// annotations to fields by their declarations' order.)
	NSN string
	NSP string
	NSK string
	// VethN is the netstack's veth (in NSN); VethP1 and VethP2 the peer's
	// ends facing the netstack and the kernel sender; VethK the kernel
	// sender's.
	VethN  string
	VethP1 string
	VethP2 string
	VethK  string

	mu sync.Mutex
	// +checklocks:mu
	procs []*exec.Cmd
	// closers close what runs in the namespaces (sandboxes) before the
	// Lab kills what is left.
	// +checklocks:mu
	closers []func()
}

var (
	labsMu sync.Mutex
	// +checklocks:labsMu
	labs = map[*Lab]bool{}
)

// New makes a Lab. On error, whatever it made is removed.
func New() (*Lab, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(b[:])
	// The namespaces carry the PID of the process that made them, so that
	// Sweep leaves the Labs of other running processes alone.
	ns := fmt.Sprintf("%s-%d-%s", Prefix, os.Getpid(), id)
	l := &Lab{
		NSN: ns + "-n", NSP: ns + "-p", NSK: ns + "-k",
		// Interface names are at most 15 bytes.
		VethN: "nqn" + id, VethP1: "nqp" + id, VethP2: "nqq" + id, VethK: "nqk" + id,
	}
	labsMu.Lock()
	labs[l] = true
	labsMu.Unlock()
	steps := [][]string{
		{"ip", "netns", "add", l.NSN},
		{"ip", "netns", "add", l.NSP},
		{"ip", "netns", "add", l.NSK},
		{"ip", "link", "add", l.VethN, "netns", l.NSN, "type", "veth", "peer", "name", l.VethP1, "netns", l.NSP},
		{"ip", "link", "add", l.VethK, "netns", l.NSK, "type", "veth", "peer", "name", l.VethP2, "netns", l.NSP},
		// nsN: no address, no IPv6: the kernel there must stay silent.
		{"ip", "netns", "exec", l.NSN, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"},
		{"ip", "netns", "exec", l.NSN, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"},
		{"ip", "netns", "exec", l.NSN, "ip", "link", "set", l.VethN, "up"},
		{"ip", "netns", "exec", l.NSN, "ip", "link", "set", "lo", "up"},
		// nsP: the peer.
		{"ip", "netns", "exec", l.NSP, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"},
		{"ip", "netns", "exec", l.NSP, "ip", "addr", "add", PeerAddr + "/24", "dev", l.VethP1},
		{"ip", "netns", "exec", l.NSP, "ip", "addr", "add", PeerKernelAddr + "/24", "dev", l.VethP2},
		{"ip", "netns", "exec", l.NSP, "ip", "link", "set", l.VethP1, "up"},
		{"ip", "netns", "exec", l.NSP, "ip", "link", "set", l.VethP2, "up"},
		{"ip", "netns", "exec", l.NSP, "ip", "link", "set", "lo", "up"},
		{"ip", "netns", "exec", l.NSP, "ethtool", "-K", l.VethP1, "tso", "off", "gso", "off"},
		// And the kernel receiver the same frames, for the ingress control.
		{"ip", "netns", "exec", l.NSP, "ethtool", "-K", l.VethP2, "tso", "off", "gso", "off"},
		// nsK: the kernel sender.
		{"ip", "netns", "exec", l.NSK, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"},
		{"ip", "netns", "exec", l.NSK, "ip", "addr", "add", KernelAddr + "/24", "dev", l.VethK},
		{"ip", "netns", "exec", l.NSK, "ip", "link", "set", l.VethK, "up"},
		{"ip", "netns", "exec", l.NSK, "ip", "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			l.Close()
			return nil, fmt.Errorf("%s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	return l, nil
}

// Close stops what the Lab started and removes its namespaces (and so its
// veths). It is safe to call more than once.
func (l *Lab) Close() {
	l.mu.Lock()
	closers := l.closers
	l.closers = nil
	l.mu.Unlock()
	for _, c := range closers {
		c()
	}
	l.mu.Lock()
	for _, p := range l.procs {
		if p.Process != nil {
			p.Process.Kill()
		}
	}
	for _, ns := range []string{l.NSN, l.NSP, l.NSK} {
		killAll(ns)
	}
	for _, p := range l.procs {
		p.Wait() // bounded by WaitDelay if a child held its output open
	}
	l.procs = nil
	l.mu.Unlock()
	for _, ns := range []string{l.NSN, l.NSP, l.NSK} {
		exec.Command("ip", "netns", "del", ns).Run()
	}
	labsMu.Lock()
	delete(labs, l)
	labsMu.Unlock()
}

// CloseAll closes every Lab still open: for an interrupted run.
func CloseAll() {
	labsMu.Lock()
	var open []*Lab
	for l := range labs {
		open = append(open, l)
	}
	labsMu.Unlock()
	for _, l := range open {
		l.Close()
	}
}

// killAll kills every process in namespace ns (a forking server's
// children outlive the process the Lab started).
func killAll(ns string) {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	}
}

// Sweep removes the namespaces that processes killed before they could
// close their Labs left behind; those of running processes (another test
// binary, a qdiscbench run) stay.
func Sweep() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], Prefix+"-") {
			continue
		}
		pid, _, _ := strings.Cut(strings.TrimPrefix(f[0], Prefix+"-"), "-")
		if n, err := strconv.Atoi(pid); err == nil && Alive(n) {
			continue
		}
		killAll(f[0])
		exec.Command("ip", "netns", "del", f[0]).Run()
	}
}

// Run runs a command in namespace ns and returns its output.
func Run(ns string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip netns exec %s %s: %v: %s", ns, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Start starts a command in namespace ns that runs until the Lab closes
// (or until it ends by itself), with its output in out.
func (l *Lab) Start(ns string, out *strings.Builder, args ...string) (*exec.Cmd, error) {
	c := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...)
	if out != nil {
		c.Stdout, c.Stderr = &syncWriter{b: out}, &syncWriter{b: out}
	}
	c.WaitDelay = 2 * time.Second
	if err := c.Start(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.procs = append(l.procs, c)
	l.mu.Unlock()
	return c, nil
}

// RxBytes reads an interface's received L2 bytes in namespace ns.
func RxBytes(ns, dev string) (uint64, error) {
	out, err := Run(ns, "cat", "/sys/class/net/"+dev+"/statistics/rx_bytes")
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(out), 10, 64)
}

// Tbf puts the kernel's tbf on dev in ns: rate in bytes/s, burst in bytes,
// latency.
func Tbf(ns, dev string, rate, burst uint64, latency time.Duration) error {
	_, err := Run(ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
		"rate", fmt.Sprintf("%dbit", rate*8), "burst", fmt.Sprint(burst), "latency", fmt.Sprintf("%dus", latency.Microseconds()))
	return err
}

// WaitListening waits until something listens on TCP port in ns.
func WaitListening(ns string, port int) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		out, _ := Run(ns, "ss", "-Hltn", fmt.Sprintf("sport = :%d", port))
		if strings.TrimSpace(out) != "" {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("nothing listens on port %d in %s", port, ns)
}

// FromFlags builds the qdisc configuration from runsc flags and OCI
// annotations, as a runtime does.
func FromFlags(args []string, annotations map[string]string) (*runscflags.Config, error) {
	fs := flag.NewFlagSet("runsc", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	runscflags.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	cfg, err := runscflags.NewFromFlags(fs)
	if err != nil {
		return nil, err
	}
	if err := cfg.ApplyAnnotations(annotations); err != nil {
		return nil, err
	}
	return cfg, nil
}

// syncWriter lets a command's stdout and stderr share one builder.
type syncWriter struct {
	b *strings.Builder
}

var outMu sync.Mutex

func (w *syncWriter) Write(p []byte) (int, error) {
	outMu.Lock()
	defer outMu.Unlock()
	return w.b.Write(p)
}
