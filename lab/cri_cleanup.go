package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// criOwnerFile, in a CRI's Dir, names the process that runs it, its
// namespace and cgroup parent.
const criOwnerFile = "nqe2e-cri-owner.json"

// SweepCRI removes what the CRIs of processes that died before closing
// them left under the temporary directory (the directories tests give
// StartCRI): their sandboxes and shims, mounts, cgroups and namespaces
// (Sweep kills what ran in the namespace, containerd with it). The CRIs of
// running processes stay.
func SweepCRI() {
	sweep(criOwnerFile, func(dir string, o owner) {
		c := &CRI{NS: o.NS, NSPath: "/run/netns/" + o.NS, Dir: dir, Socket: filepath.Join(dir, "containerd.sock"), CgroupParent: o.CgroupParent}
		c.shutdown()
	})
}

// Close stops and removes every pod, stops containerd (SIGTERM, then
// SIGKILL, by its PID), kills whatever the shims and runtimes left running
// (processes that name Dir or run in the pods' cgroups), unmounts
// everything under Dir (the pods' netns mounts, rootfs mounts, runsc's),
// deletes cni0, the pods' cgroups, the shims' sockets containerd's shim
// library keeps under /run/containerd/s, and the namespace, and empties
// Dir (host-local's IPAM state is in it). It is safe to call more than
// once; Leftovers says what survived.
func (c *CRI) Close() { c.lab.Close() }

func (c *CRI) shutdown() { c.tasks.close(c.cleanup()) }

// cleanup says where the CRI leaves things; its stop removes the pods,
// while containerd can still stop them as the kubelet would, and then
// stops containerd.
func (c *CRI) cleanup() *cleanup {
	return &cleanup{
		ns: c.NS, nsPath: c.NSPath, dir: c.Dir, cgroupParent: c.CgroupParent,
		bridge:      CRIBridge,
		taskState:   filepath.Join(c.Dir, "state", "io.containerd.runtime.v2.task", "k8s.io"),
		shimAddress: filepath.Join(c.Socket, "k8s.io"),
		runDirs:     []string{"/run/containerd/s", "/run/containerd"},
		stop:        c.stopContainerd,
		strays:      c.Strays,
	}
}

// stopContainerd removes every pod and stops containerd (SIGTERM, then
// SIGKILL).
func (c *CRI) stopContainerd() []string {
	if c.pid == 0 || !Alive(c.pid) {
		return nil
	}
	c.Client(time.Minute, "rmp", "-all")
	terminate(c.pid, c.waited, 10*time.Second)
	return nil
}

// Strays are the processes the CRI left: those whose command line, working
// directory or root names Dir (shims, runsc sandboxes and gofers), those in
// the pods' cgroups (runc's containers), and those in the namespace.
func (c *CRI) Strays() []int { return straysOf(c.Dir, c.CgroupParent, c.NS) }

// Leftovers lists what Close should have removed and did not.
func (c *CRI) Leftovers() []string {
	var left []string
	if c.pid != 0 && Alive(c.pid) {
		left = append(left, fmt.Sprintf("containerd (PID %d) is running", c.pid))
	}
	left = append(left, c.tasks.leftovers(c.cleanup())...)
	for _, p := range []string{filepath.Join(c.Dir, "cni", "ipam"), filepath.Join("/var/lib/cni/networks", criNetwork)} {
		if _, err := os.Stat(p); err == nil {
			left = append(left, "IPAM state "+p)
		}
	}
	return left
}
