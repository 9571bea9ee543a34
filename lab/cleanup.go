package lab

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A cleanup says where a containerd run by the test in a network namespace
// of its own, a CRI's or a Docker's, leaves things on the host: both leave
// the same kinds (pods' or containers' processes, mounts under Dir, a
// bridge, cgroups, shims' sockets in /run/containerd/s, the namespace), so
// one shutdown, one list of leftovers and one sweep serve both. The two
// differ only in the fields below.
type cleanup struct {
	ns           string
	nsPath       string
	dir          string
	cgroupParent string
	// bridge is the bridge made in the namespace (cni0, docker0).
	bridge string
	// taskState is containerd's task state directory for the containerd
	// namespace the tasks run in: one entry per task ID.
	taskState string
	// shimAddress is containerd's socket joined with that containerd
	// namespace: the shims' socket names hash it with a task's ID.
	shimAddress string
	// runDirs are the directories under /run the daemons make, removed
	// if they are empty (another daemon's stay), children first.
	runDirs []string
	// stop stops the pods or containers and then the daemons; it returns
	// the IDs of tasks it learnt of on the way.
	stop func() []string
	// strays lists the processes left (the daemons aside).
	strays func() []int
}

// tasks are the IDs of the pods or containers a CRI or a Docker ran, and
// of the tasks found in containerd's state at Close: their shims' sockets
// are known by name. Its zero value is empty and open.
type tasks struct {
	mu sync.Mutex
	// +checklocks:mu
	closed bool
	// +checklocks:mu
	ids map[string]bool
}

// add adds the task id.
func (t *tasks) add(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids == nil {
		t.ids = map[string]bool{}
	}
	t.ids[id] = true
}

// close runs k's shutdown the first time it is called.
func (t *tasks) close(k *cleanup) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.closed = true
	if t.ids == nil {
		t.ids = map[string]bool{}
	}
	k.shutdown(t.ids)
}

// leftovers is k's leftovers for these tasks.
func (t *tasks) leftovers(k *cleanup) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return k.leftovers(t.ids)
}

// shutdown stops what runs and removes what was made: it adds to tasks
// those in containerd's state, stops (k.stop), kills whatever the shims and
// runtimes left running, unmounts everything under the directory (deepest
// first: a rootfs's mounts before the rootfs, overlay2's merged
// directories before the data-root), deletes the bridge, the cgroups, the
// shims' sockets and empty run directories and the namespace, and empties
// the directory if nothing is mounted under it any more. The caller holds
// the lock that guards tasks.
func (k *cleanup) shutdown(tasks map[string]bool) {
	for _, id := range k.stateTasks() {
		tasks[id] = true
	}
	for _, id := range k.stop() {
		tasks[id] = true
	}
	for i := 0; i < 5; i++ {
		pids := k.strays()
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		waitGone(pids, 5*time.Second)
	}
	for i := 0; i < 5 && len(MountsUnder(k.dir)) > 0; i++ {
		ms := MountsUnder(k.dir)
		for j := len(ms) - 1; j >= 0; j-- {
			unix.Unmount(ms[j], unix.MNT_DETACH)
		}
	}
	if k.ns != "" {
		exec.Command("nsenter", "--net="+k.nsPath, "ip", "link", "del", k.bridge).Run()
	}
	for _, cg := range cgroupDirs(k.cgroupParent) {
		syscall.Rmdir(cg)
	}
	for _, s := range k.shimSockets(tasks) {
		os.Remove(s)
	}
	for _, dir := range k.runDirs {
		os.Remove(dir)
	}
	if k.ns != "" {
		exec.Command("ip", "netns", "del", k.ns).Run()
	}
	if len(MountsUnder(k.dir)) == 0 {
		ents, _ := os.ReadDir(k.dir)
		for _, e := range ents {
			os.RemoveAll(filepath.Join(k.dir, e.Name()))
		}
	}
}

// stateTasks are the IDs of the tasks whose state is under the directory.
func (k *cleanup) stateTasks() []string {
	ents, _ := os.ReadDir(k.taskState)
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.Name())
	}
	return ids
}

// shimSockets are the sockets containerd's shim library makes in
// /run/containerd/s for tasks, named by a hash of containerd's address,
// the containerd namespace and the task's ID (a pod's containers share
// the pod's shim), and the shim's debug socket's (containerd 1.7 and
// later); other containerds' are left alone.
func (k *cleanup) shimSockets(tasks map[string]bool) []string {
	var socks []string
	for _, id := range sortedKeys(tasks) {
		p := filepath.Join(k.shimAddress, id)
		for _, q := range []string{p, filepath.Join(p, "debug")} {
			socks = append(socks, fmt.Sprintf("/run/containerd/s/%x", sha256.Sum256([]byte(q))))
		}
	}
	return socks
}

// leftovers lists what shutdown should have removed and did not, the
// daemons aside: processes, mounts, the namespace, cgroups and the shims'
// sockets. The caller holds the lock that guards tasks.
func (k *cleanup) leftovers(tasks map[string]bool) []string {
	var left []string
	if pids := k.strays(); len(pids) > 0 {
		left = append(left, fmt.Sprintf("processes %v are running", pids))
	}
	if ms := MountsUnder(k.dir); len(ms) > 0 {
		left = append(left, fmt.Sprintf("mounts %v", ms))
	}
	if out, _ := exec.Command("ip", "netns", "list").Output(); k.ns != "" && strings.Contains(string(out), k.ns) {
		left = append(left, "namespace "+k.ns)
	}
	if cgs := cgroupDirs(k.cgroupParent); len(cgs) > 0 {
		left = append(left, fmt.Sprintf("cgroups %v", cgs))
	}
	for _, s := range k.shimSockets(tasks) {
		if _, err := os.Stat(s); err == nil {
			left = append(left, "shim socket "+s)
		}
	}
	return left
}

// owner, in a file in a CRI's or a Docker's Dir (criOwnerFile,
// dockerOwnerFile), names the process that
// runs it, its namespace and its cgroup parent.
type owner struct {
	PID          int    `json:"pid"`
	NS           string `json:"ns"`
	CgroupParent string `json:"cgroup_parent"`
}

// hostNames names a CRI's or a Docker's namespace and cgroup parent, for
// kind ("cri", "docker"): like a Lab's, with the PID and a random ID, so
// that Sweep removes the namespace (and kills what runs in it) after a run
// that could not close it.
func hostNames(kind string) (ns, cgroupParent string, err error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	id := hex.EncodeToString(b[:])
	return fmt.Sprintf("%s-%d-%s-%s", Prefix, os.Getpid(), id, kind), fmt.Sprintf("/%s-%s-%s", Prefix, kind, id), nil
}

// hostLab makes a Lab of the one namespace ns (its three names are ns)
// whose Close first calls shutdown, then kills what Start (the sink)
// started and what runs in the namespace, and deletes it; CloseAll (on
// SIGINT) closes it too.
func hostLab(ns string, shutdown func()) *Lab {
	l := &Lab{NSN: ns, NSP: ns, NSK: ns}
	l.mu.Lock()
	l.closers = append(l.closers, shutdown)
	l.mu.Unlock()
	labsMu.Lock()
	labs[l] = true
	labsMu.Unlock()
	return l
}

// makeHost writes dir/ownerFile, for sweep should this process die before
// it closes what it starts in dir, then adds the namespace ns and brings
// its loopback up.
func makeHost(dir, ownerFile, ns, cgroupParent string) error {
	b, err := json.Marshal(owner{PID: os.Getpid(), NS: ns, CgroupParent: cgroupParent})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), b, 0o644); err != nil {
		return err
	}
	for _, s := range [][]string{
		{"ip", "netns", "add", ns},
		{"nsenter", "--net=/run/netns/" + ns, "ip", "link", "set", "lo", "up"},
	} {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	return nil
}

// terminate stops the daemon pid as its service would: SIGTERM, then
// SIGKILL after grace; it returns once waited (closed when the daemon has
// been reaped) is.
func terminate(pid int, waited chan struct{}, grace time.Duration) {
	syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-waited:
	case <-time.After(grace):
		syscall.Kill(pid, syscall.SIGKILL)
		<-waited
	}
}

// sweep finds the owner files named file two levels under the temporary
// directory (the directories tests give StartCRI and StartDocker) whose
// process has died, shuts down what it left there (shutdown builds the
// cleanup from the directory and the owner and runs it), and removes the
// directory, and the test's TempDir above it if it is empty, once nothing
// is mounted under it. What running processes own stays.
func sweep(file string, shutdown func(dir string, o owner)) {
	owners, _ := filepath.Glob(filepath.Join(os.TempDir(), "*", "*", file))
	for _, f := range owners {
		b, err := os.ReadFile(f)
		var o owner
		if err != nil || json.Unmarshal(b, &o) != nil || o.PID == 0 || Alive(o.PID) || !strings.HasPrefix(o.NS, Prefix+"-") {
			continue
		}
		dir := filepath.Dir(f)
		shutdown(dir, o)
		if len(MountsUnder(dir)) == 0 {
			os.RemoveAll(dir)
			os.Remove(filepath.Dir(dir))
		}
	}
}

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
