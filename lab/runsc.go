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
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// RunscBinary returns the path of a runsc binary: $NETQDISC_RUNSC, or the
// one runsc/build.sh builds (runsc/bin/runsc, or runsc/bin/runsc-upstream
// for upstream's), found from the working directory up. The error says how
// to build it.
func RunscBinary(upstream bool) (string, error) {
	if upstream {
		return runscNamed("runsc-upstream", "NETQDISC_RUNSC_UPSTREAM", "runsc/build.sh --upstream")
	}
	return runscNamed("runsc", "NETQDISC_RUNSC", "runsc/build.sh")
}

// RunscNoTSQBinary returns the path of runsc/build.sh's runsc without its
// TCP small queues (patch 0006), runsc/bin/runsc-notsq, or
// $NETQDISC_RUNSC_NOTSQ: the control of the backpressure tests.
func RunscNoTSQBinary() (string, error) {
	return runscNamed("runsc-notsq", "NETQDISC_RUNSC_NOTSQ", "runsc/build.sh")
}

// runscNamed finds runsc/bin/name from the working directory up, or takes
// $env; the error says to run how.
func runscNamed(name, env, how string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "runsc", "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no %s binary: build it with %s (or set $%s)", name, how, env)
		}
		dir = parent
	}
}

// SandboxOptions describe a runsc sandbox in a Lab.
type SandboxOptions struct {
	// Runsc is the runsc binary.
	Runsc string
	// Flags are runsc's global flags: "--qdisc=tbf", "--gso=false".
	Flags []string
	// Annotations go into the OCI spec (dev.gvisor.flag.* and others).
	Annotations map[string]string
	// Mounts are host directories bound read-only into the container at
	// the same path.
	Mounts []string
	// Net, if not nil, puts the sandbox on another veth than the Lab's
	// netstack veth (VethN in NSN, NetstackAddr): a Node's.
	Net *SandboxNet
}

// SandboxNet is where a sandbox's network is: the namespace whose veth,
// address and routes runsc takes as it starts, and where it is pinged
// from to see that it is up.
type SandboxNet struct {
	// NS is the namespace and Dev its veth.
	NS  string
	Dev string
	// Addr is the sandbox's address with its prefix length
	// ("10.80.1.1/24"); Gateway, if set, the next hop of its default
	// route.
	Addr    string
	Gateway string
	// PingFrom is the namespace that pings Addr until the sandbox answers.
	PingFrom string
}

// Sandbox is a runsc container in the Lab's netstack namespace (NSN), in
// place of the in-process netstack: runsc takes VethN and NetstackAddr
// from the namespace (or, with SandboxOptions.Net, another namespace's
// veth and address). Its root is the host's "/", read-only, so it runs
// the host's programs (iperf, socat); its first process sleeps until the
// sandbox is closed, and Exec runs the workload. Its cgroup (cgroupsPath,
// named after its ID) gives its CPU time.
type Sandbox struct {
	lab *Lab
	// runsc is the binary; dir holds the bundle, runsc's root (state),
	// and debugLog; id is the container's. (One field a line, for
	// checklocks.)
	runsc    string
	dir      string
	root     string
	id       string
	debugLog string
	// flags are runsc's flags the sandbox was started with, to restore
	// it with (see Restore).
	flags []string
	// net is where the sandbox's network is.
	net SandboxNet

	mu sync.Mutex
	// +checklocks:mu
	closed bool
}

// StartSandbox starts a sandbox with runsc run --detach. On error (runsc
// refused the flags or annotations, say) nothing is left running, and the
// error has runsc's output.
func (l *Lab) StartSandbox(o SandboxOptions) (_ *Sandbox, err error) {
	dir, err := os.MkdirTemp("", Prefix+"-sandbox-")
	if err != nil {
		return nil, err
	}
	net := SandboxNet{NS: l.NSN, Dev: l.VethN, Addr: NetstackAddr + "/24", PingFrom: l.NSP}
	if o.Net != nil {
		net = *o.Net
	}
	s := &Sandbox{lab: l, runsc: o.Runsc, dir: dir, root: filepath.Join(dir, "root"), id: filepath.Base(dir), debugLog: filepath.Join(dir, "logs") + "/", flags: o.Flags, net: net}
	l.mu.Lock()
	l.closers = append(l.closers, s.Close)
	l.mu.Unlock()
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := s.writeBundle(o); err != nil {
		return nil, err
	}
	if err := s.launch("run", "--detach", "--bundle", filepath.Join(dir, "bundle"), s.id); err != nil {
		return nil, err
	}
	return s, nil
}

// launch runs runsc with the sandbox's flags and the command given (run,
// or restore), and waits until the sandbox answers ping.
func (s *Sandbox) launch(command ...string) error {
	// runsc takes the namespace's address and routes off the veth as it
	// starts (and a previous sandbox took them): put them back.
	Run(s.net.NS, "ip", "addr", "replace", s.net.Addr, "dev", s.net.Dev)
	if s.net.Gateway != "" {
		if _, err := Run(s.net.NS, "ip", "route", "replace", "default", "via", s.net.Gateway, "dev", s.net.Dev); err != nil {
			return err
		}
	}
	args := append([]string{"--root", s.root, "--network", "sandbox", "--debug", "--debug-log", s.debugLog}, s.flags...)
	args = append(args, command...)
	// The sandbox keeps runsc's stdout and stderr as the container's: a
	// file, not a pipe that would stay open.
	out, err := os.Create(filepath.Join(s.dir, command[0]+".out"))
	if err != nil {
		return err
	}
	defer out.Close()
	run := exec.Command(s.runsc, args...)
	run.Stdout, run.Stderr = out, out
	if err := run.Run(); err != nil {
		said, _ := os.ReadFile(out.Name())
		return fmt.Errorf("runsc %s: %v: %s", command[0], err, strings.TrimSpace(string(said)))
	}
	return s.waitAnswers(10 * time.Second)
}

// writeBundle writes the OCI bundle: runsc's own default spec with the
// host's root read-only, a sleeping first process, the Lab's namespace,
// a cgroup, o's mounts and annotations.
func (s *Sandbox) writeBundle(o SandboxOptions) error {
	bundle := filepath.Join(s.dir, "bundle")
	if err := os.MkdirAll(bundle, 0o755); err != nil {
		return err
	}
	if out, err := exec.Command(s.runsc, "spec", "--bundle", bundle).CombinedOutput(); err != nil {
		return fmt.Errorf("runsc spec: %v: %s", err, out)
	}
	path := filepath.Join(bundle, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		return err
	}
	spec["root"] = map[string]any{"path": "/", "readonly": true}
	proc := spec["process"].(map[string]any)
	proc["terminal"] = false
	proc["args"] = []string{"sleep", "1000000"}
	linux := spec["linux"].(map[string]any)
	linux["cgroupsPath"] = "/" + s.id
	for _, n := range linux["namespaces"].([]any) {
		if ns := n.(map[string]any); ns["type"] == "network" {
			ns["path"] = "/var/run/netns/" + s.net.NS
		}
	}
	mounts, _ := spec["mounts"].([]any)
	for _, m := range o.Mounts {
		mounts = append(mounts, map[string]any{"destination": m, "type": "bind", "source": m, "options": []string{"rbind", "ro"}})
	}
	spec["mounts"] = mounts
	spec["annotations"] = o.Annotations
	if b, err = json.MarshalIndent(spec, "", "  "); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// waitAnswers waits until the sandbox's netstack answers ping from the peer.
func (s *Sandbox) waitAnswers(timeout time.Duration) error {
	addr, _, _ := strings.Cut(s.net.Addr, "/")
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := Run(s.net.PingFrom, "ping", "-n", "-c", "1", "-W", "1", addr); err == nil {
			return nil
		}
	}
	return fmt.Errorf("the sandbox did not answer ping within %v", timeout)
}

// Exec starts a program in the sandbox (runsc exec), with its output in
// out; it ends with the program or when the sandbox is closed.
func (s *Sandbox) Exec(out *strings.Builder, args ...string) (*exec.Cmd, error) {
	c := exec.Command(s.runsc, append([]string{"--root", s.root, "exec", s.id}, args...)...)
	if out != nil {
		c.Stdout, c.Stderr = &syncWriter{b: out}, &syncWriter{b: out}
	}
	c.WaitDelay = 2 * time.Second
	if err := c.Start(); err != nil {
		return nil, err
	}
	s.lab.mu.Lock()
	s.lab.procs = append(s.lab.procs, c)
	s.lab.mu.Unlock()
	return c, nil
}

// ID is the container's ID, which names its cgroup too.
func (s *Sandbox) ID() string { return s.id }

// Root is runsc's root directory for the sandbox (its --root): the state
// runsc's commands about the sandbox need.
func (s *Sandbox) Root() string { return s.root }

// State is what runsc state says of the sandbox: its status and the PID
// of its sandbox process.
func (s *Sandbox) State() (status string, pid int, err error) {
	out, err := exec.Command(s.runsc, "--root", s.root, "state", s.id).Output()
	if err != nil {
		return "", 0, fmt.Errorf("runsc state: %v", err)
	}
	var st struct {
		Status string `json:"status"`
		Pid    int    `json:"pid"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return "", 0, err
	}
	return st.Status, st.Pid, nil
}

// Pids returns the host processes of the sandbox: those in its network
// namespace (the sandbox and its gofer).
func (s *Sandbox) Pids() []int { return nsPids(s.net.NS) }

// NetstackPids returns the processes in the Lab's netstack namespace
// (NSN): a sandbox's, when one runs there.
func (l *Lab) NetstackPids() []int { return nsPids(l.NSN) }

// nsPids returns the processes in network namespace ns.
func nsPids(ns string) []int {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// CPU returns the CPU time the sandbox has used, from its cgroup
// (cgroup v1 cpuacct, or v2 cpu.stat).
func (s *Sandbox) CPU() (time.Duration, error) {
	if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuacct", s.id, "cpuacct.usage")); err == nil {
		ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return time.Duration(ns), err
	}
	b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", s.id, "cpu.stat"))
	if err != nil {
		return 0, fmt.Errorf("the sandbox's cgroup has no CPU accounting: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "usage_usec" {
			us, err := strconv.ParseInt(f[1], 10, 64)
			return time.Duration(us) * time.Microsecond, err
		}
	}
	return 0, errors.New("no usage_usec in cpu.stat")
}

// BootLog returns the sandbox's boot process log (runsc --debug-log).
func (s *Sandbox) BootLog() (string, error) {
	m, err := filepath.Glob(filepath.Join(s.debugLog, "*.boot.txt"))
	if err != nil || len(m) == 0 {
		return "", fmt.Errorf("no boot log in %s", s.debugLog)
	}
	b, err := os.ReadFile(m[0])
	return string(b), err
}

// Stop stops the sandbox and waits until its processes are gone, leaving
// its logs to read. Close calls it. It kills the container's processes
// first and gives the sandbox time to exit on its own, as it does once its
// root container is gone: only then does the boot process run
// Loader.Destroy, which logs the qdiscs' statistics. runsc delete --force
// SIGKILLs whatever is left, so run before that it would lose the log's end.
func (s *Sandbox) Stop() {
	pids := s.Pids()
	exec.Command(s.runsc, "--root", s.root, "kill", "--all", s.id, "KILL").Run()
	waitGone(pids, 10*time.Second)
	exec.Command(s.runsc, "--root", s.root, "delete", "--force", s.id).Run()
	waitGone(pids, 5*time.Second)
	for _, pid := range pids {
		if p, err := os.FindProcess(pid); err == nil && Alive(pid) {
			p.Kill()
		}
	}
}

// waitGone waits until none of pids is alive, or for at most d.
func waitGone(pids []int, d time.Duration) {
	deadline := time.Now().Add(d)
	for _, pid := range pids {
		for Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// Close stops the sandbox and removes its bundle, state and logs. The Lab
// closes its sandboxes; Close is safe to call more than once.
func (s *Sandbox) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.Stop()
	unmountUnder(s.dir)
	os.RemoveAll(s.dir)
}

// unmountUnder detaches every mount below dir: runsc mounts the gofers'
// empty network namespace in its root directory (null-netns).
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			unix.Unmount(f[4], unix.MNT_DETACH)
		}
	}
}

// Alive reports whether process pid exists and is not a zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	st := string(b)
	if i := strings.LastIndexByte(st, ')'); i >= 0 && i+2 < len(st) {
		return st[i+2] != 'Z'
	}
	return true
}

// Metric returns the runsc_<name> metric of the sandbox, summed over its
// label sets, as runsc export-metrics reads it (the sandbox must have been
// started with --metric-server). A metric at 0 is left out of the export:
// it reads as 0.
func (s *Sandbox) Metric(name string) (uint64, error) {
	out, err := exec.Command(s.runsc, "--root", s.root, "--metric-server="+MetricServer, "export-metrics", s.id).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("runsc export-metrics: %v: %s", err, out)
	}
	var sum uint64
	for _, m := range regexp.MustCompile(`(?m)^runsc_`+regexp.QuoteMeta(name)+`(?:\{[^}]*\})? (\d+)`).FindAllStringSubmatch(string(out), -1) {
		v, _ := strconv.ParseUint(m[1], 10, 64)
		sum += v
	}
	return sum, nil
}

// MetricServer is the --metric-server address sandboxes whose metrics a
// test reads are started with: it makes runsc register the sandbox's
// metrics; nothing needs to listen there.
const MetricServer = "127.0.0.1:9"

// MeasureSandbox runs iperf in the sandbox with o.Streams bulk TCP streams
// (each with an o.SendBuffer socket buffer, if set) to iperf on the peer's
// kernel, and reads the peer: on-wire rate, pings, and the sandbox's CPU
// over the window.
func (l *Lab) MeasureSandbox(s *Sandbox, o measure.Options) (measure.Result, error) {
	var r measure.Result
	stop, err := l.startIperfServer()
	if err != nil {
		return r, err
	}
	defer stop()
	if r.IdleRTT, err = idleRTT(l.NSP, NetstackAddr); err != nil {
		return r, err
	}
	var rr *rrProbe
	if o.RR {
		stopEcho, err := startEcho(s)
		if err != nil {
			return r, err
		}
		defer stopEcho()
		if rr, err = dialRR(l.NSP, NetstackAddr); err != nil {
			return r, err
		}
		defer rr.c.Close()
		idle, err := rr.run(5, 100*time.Millisecond)
		if err != nil {
			return r, fmt.Errorf("the TCP request/response probe, idle: %v", err)
		}
		r.IdleRR = measure.Quantile(idle, 0.5)
	}
	var cout strings.Builder
	cli, err := s.Exec(&cout, iperfArgs(PeerAddr, o)...)
	if err != nil {
		return r, err
	}
	defer cli.Process.Kill()
	var rrWait func() ([]time.Duration, error)
	if rr != nil {
		interval := o.PingInterval
		if interval == 0 {
			interval = 10 * time.Millisecond
		}
		rrWait = rrDuring(rr, o.Warmup, o.Window, interval)
	}
	err = window(o, l.NSP, NetstackAddr, wireBytes(l.NSP, l.VethP1), &r, s.CPU)
	if rrWait != nil {
		var rerr error
		if r.RRs, rerr = rrWait(); err == nil && rerr != nil {
			err = fmt.Errorf("the TCP request/response probe under load: %v", rerr)
		}
	}
	if err != nil {
		return r, err
	}
	if r.WireBytes == 0 {
		return r, fmt.Errorf("nothing reached the peer; iperf in the sandbox said: %s", cout.String())
	}
	return r, nil
}

// startIperfServer starts iperf's server in the sandbox on port, its
// output to out, and gives it half a second to listen (ss in the
// sandbox's namespace cannot see the sandbox's sockets); stop kills it.
func (s *Sandbox) startIperfServer(port int, out *strings.Builder) (stop func(), err error) {
	srv, err := s.Exec(out, "iperf", "-s", "-p", fmt.Sprint(port))
	if err != nil {
		return nil, err
	}
	time.Sleep(500 * time.Millisecond)
	return func() { srv.Process.Kill() }, nil
}

// LastLines returns the last n lines of a log, to show how it ended.
func LastLines(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
