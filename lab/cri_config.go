package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// writeConfig writes containerd's config.toml, the runsc shims' runsc.toml
// and the CNI network under Dir.
func (c *CRI) writeConfig(o CRIOptions) error {
	d := c.Dir
	for _, sub := range []string{"root", "state", "tmp", "opt", "cni/net.d", "cni/ipam", "runc", "runsc", "logs", "pods"} {
		if err := os.MkdirAll(filepath.Join(d, sub), 0o755); err != nil {
			return err
		}
	}
	q := strconv.Quote
	var t strings.Builder
	fmt.Fprintf(&t, `version = 3
root = %s
state = %s
temp = %s
oom_score = 0

[grpc]
  address = %s

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %s

[plugins.'io.containerd.cri.v1.runtime']
  # Root here lacks CAP_SYS_RESOURCE: no oom_score_adj below containerd's.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_cdi = false
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%s]
    conf_dir = %s
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      runtime_path = %s
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %s
        Root = %s
        SystemdCgroup = false
`, q(d+"/root"), q(d+"/state"), q(d+"/tmp"), q(c.Socket), q(CRIImage),
		q(c.Bin+"/cni"), q(d+"/cni/net.d"),
		q(c.Bin+"/containerd-shim-runc-v2"), q(mustLookPath("runc")), q(d+"/runc"))
	names := make([]string, 0, len(o.Runsc))
	for n := range o.Runsc {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := o.Runsc[n]
		conf := filepath.Join(d, n+".toml")
		var rt strings.Builder
		fmt.Fprintf(&rt, "binary_name = %s\nroot = %s\nlog_path = %s\n\n[runsc_config]\n",
			q(r.Runsc), q(filepath.Join(d, "runsc", n)), q(filepath.Join(d, "logs", n, "shim-%ID%.log")))
		cfg := map[string]string{"debug": "true", "debug-log": filepath.Join(d, "logs", n, "%ID%") + "/"}
		for k, v := range r.Config {
			cfg[k] = v
		}
		keys := make([]string, 0, len(cfg))
		for k := range cfg {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&rt, "  %s = %s\n", q(k), q(cfg[k]))
		}
		if err := os.WriteFile(conf, []byte(rt.String()), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&t, `    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.%s]
      runtime_type = 'io.containerd.runsc.v1'
      runtime_path = %s
      pod_annotations = ['dev.gvisor.flag.*', 'kubernetes.io/*-bandwidth']
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.%s.options]
        TypeUrl = 'io.containerd.runsc.v1.options'
        ConfigPath = %s
`, q(n), q(c.Bin+"/containerd-shim-runsc-v1"), q(n), q(conf))
	}
	fmt.Fprintf(&t, `
[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'

[plugins.'io.containerd.internal.v1.opt']
  path = %s

[plugins.'io.containerd.image-verifier.v1.bindir']
  bin_dir = %s

[plugins.'io.containerd.nri.v1.nri']
  disable = true
`, q(d+"/opt"), q(d+"/opt/image-verifier"))
	if err := os.WriteFile(filepath.Join(d, "config.toml"), []byte(t.String()), 0o644); err != nil {
		return err
	}
	plugins := []any{map[string]any{
		"type":        "bridge",
		"bridge":      CRIBridge,
		"isGateway":   true,
		"ipMasq":      false,
		"hairpinMode": false,
		"ipam": map[string]any{
			"type":    "host-local",
			"ranges":  [][]map[string]string{{{"subnet": CRISubnet, "gateway": CRIGateway}}},
			"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
			"dataDir": filepath.Join(d, "cni", "ipam"),
		},
	}}
	if o.BandwidthPlugin {
		// containerd fills the capability from the pod's annotations.
		plugins = append(plugins, map[string]any{"type": "bandwidth", "capabilities": map[string]bool{"bandwidth": true}})
	}
	cni := map[string]any{"cniVersion": "1.0.0", "name": criNetwork, "plugins": plugins}
	b, err := json.MarshalIndent(cni, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, "cni", "net.d", "10-"+criNetwork+".conflist"), b, 0o644)
}

func mustLookPath(name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		return name
	}
	return p
}
