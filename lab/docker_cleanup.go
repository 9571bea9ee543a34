package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SweepDocker removes what the Dockers of processes that died before
// closing them left under the temporary directory (the directories tests
// give StartDocker): their runsc sandboxes and shims, mounts, cgroups and
// namespaces (Sweep kills what ran in the namespace, dockerd and
// containerd with it). The Dockers of running processes stay.
func SweepDocker() {
	sweep(dockerOwnerFile, func(dir string, o owner) {
		d := &Docker{NS: o.NS, NSPath: "/run/netns/" + o.NS, Dir: dir, ContainerdSocket: filepath.Join(dir, "containerd", "containerd.sock"),
			DataRoot: filepath.Join(dir, "data"), ExecRoot: filepath.Join(dir, "exec"), CgroupParent: o.CgroupParent}
		d.shutdown()
	})
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

func (d *Docker) shutdown() { d.tasks.close(d.cleanup()) }

// cleanup says where the Docker leaves things. dockerd makes
// /run/docker/plugins (plugin discovery) whatever its exec-root.
func (d *Docker) cleanup() *cleanup {
	return &cleanup{
		ns: d.NS, nsPath: d.NSPath, dir: d.Dir, cgroupParent: d.CgroupParent,
		bridge:      DockerBridge,
		taskState:   filepath.Join(d.Dir, "containerd", "state", "io.containerd.runtime.v2.task", "moby"),
		shimAddress: filepath.Join(d.ContainerdSocket, "moby"),
		runDirs:     []string{"/run/containerd/s", "/run/containerd", "/run/docker/plugins", "/run/docker"},
		stop:        d.removeAndStop,
		strays:      d.Strays,
	}
}

// removeAndStop removes every container (docker rm -f) while dockerd runs,
// then stops the daemons; it returns the containers' IDs.
func (d *Docker) removeAndStop() []string {
	var ids []string
	if d.dockerd != nil && Alive(d.dockerd.pid) {
		if out, err := d.CLI(time.Minute, "ps", "-aq", "--no-trunc"); err == nil {
			if ids = strings.Fields(out); len(ids) > 0 {
				d.CLI(2*time.Minute, append([]string{"rm", "-f"}, ids...)...)
			}
		}
	}
	d.Stop()
	return ids
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
	left = append(left, d.tasks.leftovers(d.cleanup())...)
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
