package lab

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// criOwnerFile, in a CRI's Dir, names the process that runs it, its
// namespace and cgroup parent.
const criOwnerFile = "nqe2e-cri-owner.json"

type criOwner struct {
	PID          int    `json:"pid"`
	NS           string `json:"ns"`
	CgroupParent string `json:"cgroup_parent"`
}

// SweepCRI removes what the CRIs of processes that died before closing
// them left under the temporary directory (the directories tests give
// StartCRI): their sandboxes and shims, mounts, cgroups and namespaces
// (Sweep kills what ran in the namespace, containerd with it). The CRIs of
// running processes stay.
func SweepCRI() {
	owners, _ := filepath.Glob(filepath.Join(os.TempDir(), "*", "*", criOwnerFile))
	for _, f := range owners {
		b, err := os.ReadFile(f)
		var o criOwner
		if err != nil || json.Unmarshal(b, &o) != nil || o.PID == 0 || Alive(o.PID) || !strings.HasPrefix(o.NS, Prefix+"-") {
			continue
		}
		dir := filepath.Dir(f)
		c := &CRI{NS: o.NS, NSPath: "/run/netns/" + o.NS, Dir: dir, Socket: filepath.Join(dir, "containerd.sock"), CgroupParent: o.CgroupParent, tasks: map[string]bool{}}
		c.shutdown()
		if len(MountsUnder(dir)) == 0 {
			os.RemoveAll(dir)
			os.Remove(filepath.Dir(dir)) // the test's TempDir, if empty
		}
	}
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

func (c *CRI) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	for _, id := range c.stateTasks() {
		c.tasks[id] = true
	}
	if c.pid != 0 && Alive(c.pid) {
		// Pods first, while containerd can still stop them as the kubelet
		// would.
		c.Client(time.Minute, "rmp", "-all")
		syscall.Kill(c.pid, syscall.SIGTERM)
		select {
		case <-c.waited:
		case <-time.After(10 * time.Second):
			syscall.Kill(c.pid, syscall.SIGKILL)
			<-c.waited
		}
	}
	for i := 0; i < 5; i++ {
		pids := c.Strays()
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		waitGone(pids, 5*time.Second)
	}
	for i := 0; i < 5 && len(MountsUnder(c.Dir)) > 0; i++ {
		// Deepest first: a rootfs's mounts before the rootfs.
		ms := MountsUnder(c.Dir)
		for j := len(ms) - 1; j >= 0; j-- {
			unix.Unmount(ms[j], unix.MNT_DETACH)
		}
	}
	if c.NS != "" {
		exec.Command("nsenter", "--net="+c.NSPath, "ip", "link", "del", CRIBridge).Run()
	}
	for _, cg := range cgroupDirs(c.CgroupParent) {
		syscall.Rmdir(cg)
	}
	for _, s := range c.shimSockets() {
		os.Remove(s)
	}
	// Empty directories only: another containerd's stay.
	os.Remove("/run/containerd/s")
	os.Remove("/run/containerd")
	if c.NS != "" {
		exec.Command("ip", "netns", "del", c.NS).Run()
	}
	if len(MountsUnder(c.Dir)) == 0 {
		ents, _ := os.ReadDir(c.Dir)
		for _, e := range ents {
			os.RemoveAll(filepath.Join(c.Dir, e.Name()))
		}
	}
}

// stateTasks are the IDs of the tasks whose state is under Dir.
func (c *CRI) stateTasks() []string {
	ents, _ := os.ReadDir(filepath.Join(c.Dir, "state", "io.containerd.runtime.v2.task", "k8s.io"))
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.Name())
	}
	return ids
}

// shimSockets are the sockets containerd's shim library makes in
// /run/containerd/s for c.tasks, named by a hash of containerd's address,
// the namespace and the ID (the shims group a pod's containers under the
// pod's ID); other containerds' are left alone.
//
// +checklocks:c.mu
func (c *CRI) shimSockets() []string {
	var socks []string
	for id := range c.tasks {
		p := filepath.Join(c.Socket, "k8s.io", id)
		for _, q := range []string{p, filepath.Join(p, "debug")} {
			socks = append(socks, fmt.Sprintf("/run/containerd/s/%x", sha256.Sum256([]byte(q))))
		}
	}
	sort.Strings(socks)
	return socks
}

// Strays are the processes the CRI left: those whose command line, working
// directory or root names Dir (shims, runsc sandboxes and gofers), those in
// the pods' cgroups (runc's containers), and those in the namespace.
func (c *CRI) Strays() []int { return straysOf(c.Dir, c.CgroupParent, c.NS) }

// straysOf returns, sorted, the live processes (this one and except aside)
// whose command line or working directory names dir, those in the cgroups
// at and below cgroupParent, and those in the network namespace ns: what a
// lab of containerd's or dockerd's left running.
func straysOf(dir, cgroupParent, ns string, except ...int) []int {
	seen := map[int]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !Alive(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if strings.Contains(string(cmdline), dir+"/") || strings.HasPrefix(cwd, dir+"/") {
			seen[pid] = true
		}
	}
	addPids := func(text string) {
		for _, f := range strings.Fields(text) {
			if pid, err := strconv.Atoi(f); err == nil && Alive(pid) {
				seen[pid] = true
			}
		}
	}
	for _, cg := range cgroupDirs(cgroupParent) {
		b, _ := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
		addPids(string(b))
	}
	if ns != "" {
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		addPids(string(out))
	}
	for _, pid := range except {
		delete(seen, pid)
	}
	var pids []int
	for pid := range seen {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	return pids
}

// cgroupDirs lists the cgroup directories at and below parent in every
// hierarchy mounted under /sys/fs/cgroup, deepest first.
func cgroupDirs(parent string) []string {
	if parent == "" || parent == "/" {
		return nil
	}
	roots := []string{"/sys/fs/cgroup"}
	if m, err := filepath.Glob("/sys/fs/cgroup/*"); err == nil {
		roots = append(roots, m...)
	}
	var dirs []string
	for _, r := range roots {
		top := filepath.Join(r, parent)
		if fi, err := os.Stat(top); err != nil || !fi.IsDir() {
			continue
		}
		filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	return dirs
}

// MountsUnder lists the mount points under dir, in mount order.
func MountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil || dir == "" {
		return nil
	}
	var ms []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			ms = append(ms, f[4])
		}
	}
	return ms
}

// Leftovers lists what Close should have removed and did not.
func (c *CRI) Leftovers() []string {
	var left []string
	if c.pid != 0 && Alive(c.pid) {
		left = append(left, fmt.Sprintf("containerd (PID %d) is running", c.pid))
	}
	if pids := c.Strays(); len(pids) > 0 {
		left = append(left, fmt.Sprintf("processes %v are running", pids))
	}
	if ms := MountsUnder(c.Dir); len(ms) > 0 {
		left = append(left, fmt.Sprintf("mounts %v", ms))
	}
	if out, _ := exec.Command("ip", "netns", "list").Output(); c.NS != "" && strings.Contains(string(out), c.NS) {
		left = append(left, "namespace "+c.NS)
	}
	if cgs := cgroupDirs(c.CgroupParent); len(cgs) > 0 {
		left = append(left, fmt.Sprintf("cgroups %v", cgs))
	}
	for _, p := range []string{filepath.Join(c.Dir, "cni", "ipam"), filepath.Join("/var/lib/cni/networks", criNetwork)} {
		if _, err := os.Stat(p); err == nil {
			left = append(left, "IPAM state "+p)
		}
	}
	c.mu.Lock()
	for _, s := range c.shimSockets() {
		if _, err := os.Stat(s); err == nil {
			left = append(left, "shim socket "+s)
		}
	}
	c.mu.Unlock()
	return left
}
