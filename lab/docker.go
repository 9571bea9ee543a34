package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A Docker is Debian's Docker Engine (package docker.io: dockerd 20.10,
// Debian's containerd 1.6 and its runc shim) as an operator runs it, with
// netqdisc's runsc as a runtime in daemon.json, but started by the test in
// a network namespace of its own rather than by systemd:
//
//	the Docker's namespace (NS), made for one run
//	  containerd, dockerd, the shims, the sink
//	  docker0  DockerGateway/24 ─┬─ veth ─ container netns (runsc sandbox)  DockerSubnet.x
//	                             └─ veth ─ ...
//
// Docker runs runsc through containerd's runc shim (containerd-shim-runc-v2
// with runsc as its runtime binary): gVisor's shim is not involved.
// containerd is started first, as Debian's containerd.service does, and
// dockerd is given --containerd; both run in NS (entered with nsenter
// --net, as the CRI's containerd), so docker0 and dockerd's iptables rules
// are NS's. Their state, sockets, daemon.json, the image store, the
// containers' netns mounts, runsc's root and logs are under Dir. Close
// removes everything: containers, dockerd and containerd (by their PIDs),
// what the shims and runsc left, the mounts under Dir (runsc's null-netns
// among them), docker0, the containers' cgroups, and NS.
type Docker struct {
	// NS is the network namespace's name (ip netns), NSPath its path.
	NS     string
	NSPath string
	// Dir holds everything dockerd, containerd and runsc write.
	Dir string
	// Bin is cri/bin: the sink and the offline image.
	Bin string
	// Socket is dockerd's API socket; ContainerdSocket containerd's.
	Socket           string
	ContainerdSocket string
	// DataRoot and ExecRoot are dockerd's --data-root and --exec-root.
	DataRoot string
	ExecRoot string
	// CgroupParent is the containers' cgroup parent (cgroupfs).
	CgroupParent string
	// Runsc is the runsc binary each runtime's path names.
	Runsc string
	// Client is Debian's docker client (the docker.io package's), which
	// may not be the first docker on $PATH.
	Client string

	lab        *Lab
	start      time.Time
	dockerd    *daemonProc
	containerd *daemonProc

	// tasks are the containers run and those found at Close.
	tasks tasks
}

// daemonProc is a daemon the Docker started: waited is closed when it
// has exited and been reaped.
type daemonProc struct {
	pid    int
	waited chan struct{}
}

// The Docker's default bridge network (daemon.json's bip): apart from the
// host's addresses, the Lab's 10.77/10.78 and the CRI's CRISubnet.
const (
	DockerBridge  = "docker0"
	DockerSubnet  = "10.80.0.0/24"
	DockerGateway = "10.80.0.1"
)

// DockerBinaries are the programs the Docker runs, all from Debian's
// docker.io and its dependencies (containerd, runc, iptables).
var DockerBinaries = map[string]string{
	"dockerd":                 "/usr/sbin/dockerd",
	"docker":                  "/usr/bin/docker",
	"containerd":              "/usr/bin/containerd",
	"containerd-shim-runc-v2": "/usr/bin/containerd-shim-runc-v2",
	"iptables":                "/usr/sbin/iptables",
}

// CheckDocker reports why a Docker cannot run here, or nil.
func CheckDocker() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root to make network namespaces and run dockerd")
	}
	var missing []string
	for _, name := range []string{"containerd", "containerd-shim-runc-v2", "docker", "dockerd", "iptables"} {
		if _, err := os.Stat(DockerBinaries[name]); err != nil {
			missing = append(missing, DockerBinaries[name])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("no %s (apt-get install docker.io: Debian's Docker Engine, with containerd, runc and iptables)", strings.Join(missing, ", "))
	}
	for _, t := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("missing %s (apt-get install iproute2 util-linux)", t)
		}
	}
	return nil
}

// DockerOptions configure a Docker: its runtimes, by name, each the runsc
// binary with these runtimeArgs (the operator's flags). The Docker adds
// --debug and --debug-log=Dir/logs/%ID%/ to each, for BootLog.
type DockerOptions struct {
	Runtimes map[string][]string
}

// StartDocker makes the namespace, writes containerd's config and
// daemon.json under dir (which must be empty, and short enough for a
// socket path), starts containerd and dockerd in the namespace and loads
// the offline image. On error, whatever it started is removed.
func StartDocker(dir, runsc string, o DockerOptions) (_ *Docker, err error) {
	if err := CheckDocker(); err != nil {
		return nil, err
	}
	bin, err := CRIBin()
	if err != nil {
		return nil, err
	}
	ns, cgroupParent, err := hostNames("docker")
	if err != nil {
		return nil, err
	}
	d := &Docker{
		NS: ns, NSPath: "/run/netns/" + ns, Dir: dir, Bin: bin,
		Socket:           filepath.Join(dir, "docker.sock"),
		ContainerdSocket: filepath.Join(dir, "containerd", "containerd.sock"),
		DataRoot:         filepath.Join(dir, "data"),
		ExecRoot:         filepath.Join(dir, "exec"),
		CgroupParent:     cgroupParent,
		Runsc:            runsc,
		Client:           DockerBinaries["docker"],
		start:            time.Now(),
	}
	d.lab = hostLab(ns, d.shutdown)
	defer func() {
		if err != nil {
			d.lab.Close()
		}
	}()
	if err := makeHost(dir, dockerOwnerFile, ns, d.CgroupParent); err != nil {
		return nil, err
	}
	if err := d.writeContainerdConfig(); err != nil {
		return nil, err
	}
	if err := d.WriteDaemonJSON(o); err != nil {
		return nil, err
	}
	if d.containerd, err = d.startDaemon("containerd.log", DockerBinaries["containerd"], "--config", filepath.Join(dir, "containerd.toml")); err != nil {
		return nil, err
	}
	if err := waitDial(d.ContainerdSocket, d.containerd, 30*time.Second); err != nil {
		return nil, fmt.Errorf("containerd: %v\n%s", err, d.Log("containerd.log", 30))
	}
	if d.dockerd, err = d.startDaemon("dockerd.log", DockerBinaries["dockerd"],
		"--config-file", filepath.Join(dir, "daemon.json"),
		"--containerd", d.ContainerdSocket,
		"-H", "unix://"+d.Socket); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, _, err := d.API("GET", "/_ping", nil)
		if err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) || !Alive(d.dockerd.pid) {
			return nil, fmt.Errorf("dockerd did not answer on %s: %v\n%s", d.Socket, err, d.Log("dockerd.log", 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := d.CLI(time.Minute, "load", "-i", filepath.Join(bin, "image.tar")); err != nil {
		return nil, fmt.Errorf("docker load: %v: %s", err, out)
	}
	return d, nil
}

// dockerOwnerFile, in a Docker's Dir, names the process that runs it, its
// namespace and cgroup parent (as criOwnerFile does a CRI's).
const dockerOwnerFile = "nqe2e-docker-owner.json"

// writeContainerdConfig writes containerd.toml: every path containerd
// keeps under Dir (the opt plugin's too, which would make /opt/containerd),
// and no CRI plugin (dockerd does not use it, as its own containerd
// would not).
func (d *Docker) writeContainerdConfig() error {
	c := filepath.Join(d.Dir, "containerd")
	for _, sub := range []string{"root", "state", "tmp", "opt"} {
		if err := os.MkdirAll(filepath.Join(c, sub), 0o711); err != nil {
			return err
		}
	}
	q := strconv.Quote
	conf := fmt.Sprintf(`version = 2
root = %s
state = %s
temp = %s
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = %s

[plugins."io.containerd.internal.v1.opt"]
  path = %s
`, q(c+"/root"), q(c+"/state"), q(c+"/tmp"), q(d.ContainerdSocket), q(c+"/opt"))
	return os.WriteFile(filepath.Join(d.Dir, "containerd.toml"), []byte(conf), 0o644)
}

// WriteDaemonJSON writes Dir/daemon.json: o's runtimes, and dockerd's
// paths, bridge and cgroup parent. A running dockerd reads it again on
// Reload. oom-score-adjust is 0: dockerd's default, -500, needs
// CAP_SYS_RESOURCE, which root on the project's machines lacks;
// deprecated-key-path keeps dockerd's key out of /etc/docker.
func (d *Docker) WriteDaemonJSON(o DockerOptions) error {
	logs := filepath.Join(d.Dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	runtimes := map[string]any{}
	for name, args := range o.Runtimes {
		runtimes[name] = map[string]any{
			"path":        d.Runsc,
			"runtimeArgs": append(append([]string{}, args...), "--debug", "--debug-log="+logs+"/%ID%/"),
		}
	}
	conf := map[string]any{
		"runtimes":            runtimes,
		"data-root":           d.DataRoot,
		"exec-root":           d.ExecRoot,
		"pidfile":             filepath.Join(d.Dir, "dockerd.pid"),
		"bip":                 DockerGateway + "/24",
		"cgroup-parent":       d.CgroupParent,
		"oom-score-adjust":    0,
		"userland-proxy":      false,
		"deprecated-key-path": filepath.Join(d.Dir, "key.json"),
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	// Written whole, then renamed: dockerd may read it at any time.
	tmp := filepath.Join(d.Dir, "daemon.json.new")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(d.Dir, "daemon.json"))
}

// Reload sends dockerd SIGHUP, as `systemctl reload docker` does, and
// waits until it says it has read daemon.json again.
func (d *Docker) Reload() error {
	before := strings.Count(d.Log("dockerd.log", 0), "Reloaded configuration")
	if err := syscall.Kill(d.dockerd.pid, syscall.SIGHUP); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		log := d.Log("dockerd.log", 0)
		if strings.Count(log, "Reloaded configuration") > before {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("dockerd did not reload daemon.json within 10s:\n%s", d.Log("dockerd.log", 10))
}

// startDaemon starts a daemon in NS, its output in Dir/logName, in a
// process group of its own (a signal to the test's group leaves it to
// Close). nsenter execs it: the PID is the daemon's.
func (d *Docker) startDaemon(logName string, args ...string) (*daemonProc, error) {
	logf, err := os.Create(filepath.Join(d.Dir, logName))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command("nsenter", append([]string{"--net=" + d.NSPath}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &daemonProc{pid: cmd.Process.Pid, waited: make(chan struct{})}
	go func() { cmd.Wait(); close(p.waited) }()
	return p, nil
}

// waitDial waits until something accepts connections on a unix socket.
func waitDial(sock string, p *daemonProc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) || !Alive(p.pid) {
			return fmt.Errorf("nothing accepts connections on %s: %v", sock, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops dockerd and then containerd as their services would (SIGTERM;
// SIGKILL after a grace period), leaving the rest to Close.
func (d *Docker) Stop() {
	for _, p := range []*daemonProc{d.dockerd, d.containerd} {
		if p != nil && Alive(p.pid) {
			terminate(p.pid, p.waited, 20*time.Second)
		}
	}
}
