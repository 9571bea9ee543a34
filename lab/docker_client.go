package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// CLI runs Debian's docker client on dockerd's socket, for at most
// timeout, and returns its output (standard output and error together).
// The client's own configuration goes under Dir, not ~/.docker.
func (d *Docker) CLI(timeout time.Duration, args ...string) (string, error) {
	return d.CLIWith(d.Client, timeout, args...)
}

// CLIWith runs client, another docker client, as CLI runs Debian's.
func (d *Docker) CLIWith(client string, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, client, append([]string{"-H", "unix://" + d.Socket}, args...)...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+filepath.Join(d.Dir, "client"))
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Run starts a container with docker run -d and returns its full ID. On
// error the container, if created, is removed.
func (d *Docker) Run(args ...string) (string, error) {
	out, err := d.CLI(time.Minute, append([]string{"run", "-d"}, args...)...)
	id := LastLines(strings.TrimSpace(out), 1)
	if len(id) == 64 {
		d.Track(id)
	}
	if err != nil {
		if len(id) == 64 {
			d.CLI(time.Minute, "rm", "-f", id)
		}
		return "", err
	}
	return id, nil
}

// Track has Close stop container id's task too, should it still run: for
// a container made through the API rather than Run.
func (d *Docker) Track(id string) {
	d.tasks.add(id)
}

// API makes a request to dockerd's HTTP API (path with its /vX.Y prefix)
// with body as JSON, and returns the status and the response body. It
// speaks HTTP/1.0 on the socket itself (dockerd then answers without
// chunks and closes), which keeps net/http and its TLS stack out of every
// test binary that links the lab.
func (d *Docker) API(method, path string, body any) (int, []byte, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return 0, nil, err
		}
	}
	c, err := net.DialTimeout("unix", d.Socket, time.Minute)
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	req := fmt.Sprintf("%s %s HTTP/1.0\r\nHost: docker\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", method, path, len(b))
	if _, err := c.Write(append([]byte(req), b...)); err != nil {
		return 0, nil, err
	}
	resp, err := io.ReadAll(c)
	if err != nil {
		return 0, nil, err
	}
	return parseHTTPResponse(resp)
}

// parseHTTPResponse splits an HTTP/1.x response read to its end into its
// status code and body.
func parseHTTPResponse(resp []byte) (int, []byte, error) {
	head, body, ok := bytes.Cut(resp, []byte("\r\n\r\n"))
	if !ok {
		return 0, nil, fmt.Errorf("dockerd's answer has no end of headers: %q", LastLines(string(resp), 3))
	}
	status, _, _ := bytes.Cut(head, []byte("\r\n"))
	f := strings.Fields(string(status))
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/1.") {
		return 0, nil, fmt.Errorf("dockerd's answer has no HTTP status line: %q", status)
	}
	code, err := strconv.Atoi(f[1])
	if err != nil || code < 100 || code > 999 {
		return 0, nil, fmt.Errorf("dockerd's answer has a bad status %q", status)
	}
	return code, body, nil
}

// APIVersion is dockerd's API version ("1.41" for Engine 20.10).
func (d *Docker) APIVersion() (string, error) {
	_, b, err := d.API("GET", "/version", nil)
	if err != nil {
		return "", err
	}
	var v struct{ APIVersion string }
	if err := json.Unmarshal(b, &v); err != nil || v.APIVersion == "" {
		return "", fmt.Errorf("dockerd's /version said %q: %v", b, err)
	}
	return v.APIVersion, nil
}

// RunscRoot is runsc's --root for every runtime of the Docker: dockerd
// 20.10 gives containerd's runc shim the root <exec-root>/runtime-runc (its
// default runtime's name, whatever the runtime's own) and the shim adds
// containerd's namespace, moby. runsc export-metrics needs it.
func (d *Docker) RunscRoot() string {
	return filepath.Join(d.ExecRoot, "runtime-runc", "moby")
}

// BootLog returns the runsc boot log of a container (its sandbox's ID is
// the container's).
func (d *Docker) BootLog(id string) (string, error) {
	m, err := filepath.Glob(filepath.Join(d.Dir, "logs", id, "*.boot.txt"))
	if err != nil || len(m) == 0 {
		return "", fmt.Errorf("no runsc boot log for %s under %s", id, filepath.Join(d.Dir, "logs"))
	}
	b, err := os.ReadFile(m[0])
	return string(b), err
}

// Spec returns the OCI spec dockerd gave runsc for a running container
// (config.json in the runc shim's bundle).
func (d *Docker) Spec(id string) (map[string]any, error) {
	b, err := os.ReadFile(filepath.Join(d.Dir, "containerd", "state", "io.containerd.runtime.v2.task", "moby", id, "config.json"))
	if err != nil {
		return nil, err
	}
	var spec map[string]any
	return spec, json.Unmarshal(b, &spec)
}

// StartSink starts cri/bin/sink in the Docker's namespace, listening on
// addr (DockerGateway:port: on docker0), for at most conns connections and
// timeout in all; it returns once the sink listens.
func (d *Docker) StartSink(addr string, conns int, timeout time.Duration) (*Sink, error) {
	return startSink(d.lab, d.NSPath, d.Bin, addr, conns, timeout)
}

// Log returns the last n lines of one of the Docker's logs
// (dockerd.log, containerd.log), or all of it for n = 0.
func (d *Docker) Log(name string, n int) string {
	b, _ := os.ReadFile(filepath.Join(d.Dir, name))
	if n == 0 {
		return string(b)
	}
	return LastLines(string(b), n)
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
