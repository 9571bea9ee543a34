package lab

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SweepDocker removes what the Dockers of processes that died before
// closing them left under the temporary directory (the directories tests
// give StartDocker): their runsc sandboxes and shims, mounts, cgroups and
// namespaces (Sweep kills what ran in the namespace, dockerd and
// containerd with it). The Dockers of running processes stay.
func SweepDocker() {
	owners, _ := filepath.Glob(filepath.Join(os.TempDir(), "*", "*", dockerOwnerFile))
	for _, f := range owners {
		b, err := os.ReadFile(f)
		var o criOwner
		if err != nil || json.Unmarshal(b, &o) != nil || o.PID == 0 || Alive(o.PID) || !strings.HasPrefix(o.NS, Prefix+"-") {
			continue
		}
		dir := filepath.Dir(f)
		d := &Docker{NS: o.NS, NSPath: "/run/netns/" + o.NS, Dir: dir, ContainerdSocket: filepath.Join(dir, "containerd", "containerd.sock"),
			DataRoot: filepath.Join(dir, "data"), ExecRoot: filepath.Join(dir, "exec"), CgroupParent: o.CgroupParent, tasks: map[string]bool{}}
		d.shutdown()
		if len(MountsUnder(dir)) == 0 {
			os.RemoveAll(dir)
			os.Remove(filepath.Dir(dir)) // the test's TempDir, if empty
		}
	}
}

// Close removes every container (docker rm -f, while dockerd runs), stops
// dockerd and containerd (Stop: SIGTERM, then SIGKILL, by their PIDs),
// kills whatever the shims and runsc left running (processes that name Dir
// or run in the containers' cgroups or the namespace), unmounts everything
// under Dir (the containers' netns mounts, overlay2's, runsc's null-netns,
// which no one else unmounts), deletes docker0, the containers' cgroups,
// the shims' sockets containerd's shim library keeps under
// /run/containerd/s, the empty /run/docker/plugins dockerd makes, and the
// namespace, and empties Dir. It is safe to call more than once; Leftovers
// says what survived.
func (d *Docker) Close() { d.lab.Close() }

func (d *Docker) shutdown() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.closed = true
	for _, id := range d.stateTasks() {
		d.tasks[id] = true
	}
	if d.dockerd != nil && Alive(d.dockerd.pid) {
		if out, err := d.CLI(time.Minute, "ps", "-aq", "--no-trunc"); err == nil {
			if ids := strings.Fields(out); len(ids) > 0 {
				for _, id := range ids {
					d.tasks[id] = true
				}
				d.CLI(2*time.Minute, append([]string{"rm", "-f"}, ids...)...)
			}
		}
	}
	d.Stop()
	for i := 0; i < 5; i++ {
		pids := d.Strays()
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		waitGone(pids, 5*time.Second)
	}
	for i := 0; i < 5 && len(MountsUnder(d.Dir)) > 0; i++ {
		// Deepest first: overlay2's merged directories before the
		// data-root bind mount they sit in.
		ms := MountsUnder(d.Dir)
		for j := len(ms) - 1; j >= 0; j-- {
			unix.Unmount(ms[j], unix.MNT_DETACH)
		}
	}
	if d.NS != "" {
		exec.Command("nsenter", "--net="+d.NSPath, "ip", "link", "del", DockerBridge).Run()
	}
	for _, cg := range cgroupDirs(d.CgroupParent) {
		syscall.Rmdir(cg)
	}
	for _, s := range d.shimSockets() {
		os.Remove(s)
	}
	// Empty directories only: another daemon's stay. dockerd makes
	// /run/docker/plugins (plugin discovery) whatever its exec-root.
	for _, dir := range []string{"/run/containerd/s", "/run/containerd", "/run/docker/plugins", "/run/docker"} {
		os.Remove(dir)
	}
	if d.NS != "" {
		exec.Command("ip", "netns", "del", d.NS).Run()
	}
	if len(MountsUnder(d.Dir)) == 0 {
		ents, _ := os.ReadDir(d.Dir)
		for _, e := range ents {
			os.RemoveAll(filepath.Join(d.Dir, e.Name()))
		}
	}
}

// stateTasks are the IDs of the tasks whose state is under Dir.
func (d *Docker) stateTasks() []string {
	ents, _ := os.ReadDir(filepath.Join(d.Dir, "containerd", "state", "io.containerd.runtime.v2.task", "moby"))
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.Name())
	}
	return ids
}

// shimSockets are the sockets containerd 1.6's shim library makes in
// /run/containerd/s for d.tasks, named by a hash of containerd's address,
// the namespace (moby) and the container's ID; other containerds' are
// left alone.
//
// +checklocks:d.mu
func (d *Docker) shimSockets() []string {
	var socks []string
	for _, id := range sortedKeys(d.tasks) {
		p := filepath.Join(d.ContainerdSocket, "moby", id)
		socks = append(socks, fmt.Sprintf("/run/containerd/s/%x", sha256.Sum256([]byte(p))))
	}
	return socks
}

// Strays are the processes the Docker left, dockerd and containerd aside:
// those whose command line or working directory names Dir (shims, runsc
// sandboxes and gofers, runsc through dockerd's wrapper script), those in
// the containers' cgroups, and those in the namespace.
func (d *Docker) Strays() []int {
	var daemons []int
	for _, p := range []*daemonProc{d.dockerd, d.containerd} {
		if p != nil {
			daemons = append(daemons, p.pid)
		}
	}
	return straysOf(d.Dir, d.CgroupParent, d.NS, daemons...)
}

// Leftovers lists what Close should have removed and did not.
func (d *Docker) Leftovers() []string {
	var left []string
	for name, p := range map[string]*daemonProc{"dockerd": d.dockerd, "containerd": d.containerd} {
		if p != nil && Alive(p.pid) {
			left = append(left, fmt.Sprintf("%s (PID %d) is running", name, p.pid))
		}
	}
	if pids := d.Strays(); len(pids) > 0 {
		left = append(left, fmt.Sprintf("processes %v are running", pids))
	}
	if ms := MountsUnder(d.Dir); len(ms) > 0 {
		left = append(left, fmt.Sprintf("mounts %v", ms))
	}
	if out, _ := exec.Command("ip", "netns", "list").Output(); d.NS != "" && strings.Contains(string(out), d.NS) {
		left = append(left, "namespace "+d.NS)
	}
	if cgs := cgroupDirs(d.CgroupParent); len(cgs) > 0 {
		left = append(left, fmt.Sprintf("cgroups %v", cgs))
	}
	d.mu.Lock()
	for _, s := range d.shimSockets() {
		if _, err := os.Stat(s); err == nil {
			left = append(left, "shim socket "+s)
		}
	}
	d.mu.Unlock()
	for _, p := range []string{"/etc/docker/key.json", "/opt/containerd", "/var/lib/docker", "/var/lib/containerd"} {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(d.start) {
			left = append(left, p+" (made during the test)")
		}
	}
	if ents, err := os.ReadDir(d.Dir); err == nil && len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		left = append(left, fmt.Sprintf("files in %s: %v", d.Dir, names))
	}
	return left
}
