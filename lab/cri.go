package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A CRI is containerd, as a Kubernetes node runs it, in a network namespace
// of its own: the programs cri/build.sh builds (containerd 2, gVisor's
// containerd-shim-runsc-v1, containerd-shim-runc-v2 with Debian's runc, the
// CNI bridge, host-local, loopback and bandwidth plugins, a CRI client and
// an offline image), driven through the CRI API as the kubelet drives it.
//
//	the CRI's namespace (NS), made for one run
//	  containerd, its shims, the sink
//	  cni0  CRIGateway/24 ─┬─ veth ─ pod netns (runsc sandbox, or runc)  CRISubnet.x
//	                       └─ veth ─ ...
//
// containerd runs in NS (entered with nsenter --net: ip netns exec would
// remount /sys and hide the cgroup mounts runsc needs) and so does the CNI
// bridge it makes; the pods' namespaces hang off that bridge. Nothing is
// sent outside NS and the pods' namespaces. All of containerd's state, its
// socket, the pods' netns mounts (netns_mounts_under_state_dir), the CNI
// configuration and IPAM state, runsc's root and logs are under Dir. Close
// removes everything: pods, containerd (by its PID), whatever the shims left
// running, the mounts under Dir, cni0, the pods' cgroups, and NS.
type CRI struct {
	// NS is the network namespace's name (ip netns), NSPath its path.
	NS     string
	NSPath string
	// Dir holds everything containerd and the runtimes write.
	Dir string
	// Bin is cri/bin.
	Bin string
	// Socket is containerd's CRI (and containerd API) socket.
	Socket string
	// CgroupParent is the pods' cgroup parent (cgroupfs): one per CRI.
	CgroupParent string

	lab    *Lab
	pid    int
	waited chan struct{}

	// tasks are the pods run and those found at Close.
	tasks tasks
}

// The CRI's CNI network: the bridge in NS, its gateway (where the sink
// listens), and the pods' subnet.
const (
	CRIBridge  = "cni0"
	CRISubnet  = "10.79.0.0/24"
	CRIGateway = "10.79.0.1"
	// CRIImage is the offline image: /pause (the pod sandbox image too),
	// /sender and /sink.
	CRIImage = "netqdisc.test/cri:v1"
	// criNetwork names the CNI network (and host-local's state directory).
	criNetwork = "nqcri"
)

// CRIBin returns cri/bin, found from the working directory up (or
// $NETQDISC_CRI_BIN), once cri/build.sh has built everything in it; the
// error says what is missing and how to build it.
func CRIBin() (string, error) {
	dir := os.Getenv("NETQDISC_CRI_BIN")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "cri", "build.sh")); err == nil {
				dir = filepath.Join(d, "cri", "bin")
				break
			}
			if filepath.Dir(d) == d {
				return "", fmt.Errorf("no cri/ above %s", wd)
			}
		}
	}
	var missing []string
	for _, f := range criBinaries {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("%s lacks %s: run cri/build.sh", dir, strings.Join(missing, ", "))
	}
	return dir, nil
}

var criBinaries = []string{
	"containerd", "ctr", "containerd-shim-runc-v2", "containerd-shim-runsc-v1", "cri", "sink", "image.tar",
	"cni/bridge", "cni/host-local", "cni/loopback", "cni/bandwidth",
}

// CheckCRI reports why a CRI cannot run here, or nil.
func CheckCRI() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root to make network namespaces and run containerd")
	}
	for _, t := range []string{"ip", "nsenter", "runc"} {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("missing %s (apt-get install iproute2 util-linux runc)", t)
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup"); err != nil {
		return errors.New("no cgroup file system at /sys/fs/cgroup")
	}
	return nil
}

// CRIRuntime is a runtime handler of the CRI: a runsc shim with a runsc
// binary and its [runsc_config] (runsc's flags, as in the shim's runsc.toml).
type CRIRuntime struct {
	Runsc  string
	Config map[string]string
}

// CRIOptions configure a CRI.
type CRIOptions struct {
	// Runsc are the runsc handlers by name ("runsc", "runsc-upstream");
	// each lets pods set dev.gvisor.flag.* and kubernetes.io/*-bandwidth
	// annotations (pod_annotations), as a node offering gVisor with
	// netqdisc would. A "runc" handler (Debian's runc) is always there.
	Runsc map[string]CRIRuntime
	// BandwidthPlugin chains the CNI bandwidth plugin after the bridge, as
	// on a node where the CNI shapes kubernetes.io/{ingress,egress}-bandwidth:
	// containerd's CRI passes a pod's annotations to it as the bandwidth
	// capability (with a burst of 2^32-1 bits), and it shapes the pod's
	// veth on the host side: a tbf on the veth for what the pod receives,
	// and for what it sends a redirect to an ifb device with a tbf. It
	// does so for every handler's pods, runsc's too.
	BandwidthPlugin bool
}

// StartCRI makes the namespace, writes the configuration under dir (which
// must be empty, and short enough for a socket path), starts containerd in
// the namespace and imports the offline image. On error, whatever it
// started is removed.
func StartCRI(dir string, o CRIOptions) (_ *CRI, err error) {
	if err := CheckCRI(); err != nil {
		return nil, err
	}
	bin, err := CRIBin()
	if err != nil {
		return nil, err
	}
	ns, cgroupParent, err := hostNames("cri")
	if err != nil {
		return nil, err
	}
	c := &CRI{
		NS: ns, NSPath: "/run/netns/" + ns, Dir: dir, Bin: bin,
		Socket:       filepath.Join(dir, "containerd.sock"),
		CgroupParent: cgroupParent,
	}
	c.lab = hostLab(ns, c.shutdown)
	defer func() {
		if err != nil {
			c.lab.Close()
		}
	}()
	if err := makeHost(dir, criOwnerFile, ns, c.CgroupParent); err != nil {
		return nil, err
	}
	if err := c.writeConfig(o); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command("nsenter", "--net="+c.NSPath, filepath.Join(bin, "containerd"), "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a signal to the test's group leaves it to
	// Close, which stops pods first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// nsenter execs containerd: the PID is containerd's.
	c.pid = cmd.Process.Pid
	c.waited = make(chan struct{})
	go func() { cmd.Wait(); close(c.waited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.Client(10*time.Second, "version"); err == nil {
			break
		} else if time.Now().After(deadline) || !Alive(c.pid) {
			return nil, fmt.Errorf("containerd did not answer on %s: %v\n%s", c.Socket, err, c.Log(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, err := exec.Command(filepath.Join(bin, "ctr"), "--address", c.Socket, "--namespace", "k8s.io",
		"images", "import", "--local", filepath.Join(bin, "image.tar")).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ctr images import: %v: %s", err, out)
	}
	return c, nil
}
