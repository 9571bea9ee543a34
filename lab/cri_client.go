package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Client runs the CRI client (cri/bin/cri) on containerd's socket, for at
// most timeout, and returns its standard output; the error has its
// standard error (the runtime's messages, verbatim).
func (c *CRI) Client(timeout time.Duration, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(c.Bin, "cri"), append([]string{"-addr", "unix://" + c.Socket, "-timeout", timeout.String()}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err != nil {
		return stdout.String(), &ClientError{Args: args, Err: err, Stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.String(), nil
}

// ClientError is a CRI client run that failed: Stderr has the runtime's
// message.
type ClientError struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *ClientError) Error() string {
	return fmt.Sprintf("cri %s: %v: %s", strings.Join(e.Args, " "), e.Err, e.Stderr)
}

// ExitCode is the client's exit code (for run, the container's).
func (e *ClientError) ExitCode() int {
	var x *exec.ExitError
	if errors.As(e.Err, &x) {
		return x.ExitCode()
	}
	return -1
}

// Pod is a pod sandbox's configuration, as the CRI client reads it.
type Pod struct {
	Name           string            `json:"name"`
	Namespace      string            `json:"namespace,omitempty"`
	UID            string            `json:"uid,omitempty"`
	RuntimeHandler string            `json:"runtime_handler"`
	Annotations    map[string]string `json:"annotations,omitempty"`
	LogDirectory   string            `json:"log_directory,omitempty"`
	CgroupParent   string            `json:"cgroup_parent,omitempty"`
	Hostname       string            `json:"hostname,omitempty"`
}

// Container is a container's configuration, as the CRI client reads it.
type Container struct {
	Name    string   `json:"name"`
	Image   string   `json:"image"`
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
}

// RunPod runs a pod sandbox (RunPodSandbox) and returns its ID; the pod
// gets the CRI's cgroup parent and a log directory under Dir. A refused
// pod's error is a *ClientError with the runtime's message.
func (c *CRI) RunPod(p *Pod) (string, error) {
	if p.CgroupParent == "" {
		p.CgroupParent = c.CgroupParent
	}
	if p.LogDirectory == "" {
		p.LogDirectory = filepath.Join(c.Dir, "pods", p.Name)
	}
	if p.Hostname == "" {
		p.Hostname = p.Name
	}
	path, err := c.writeJSON("pod-"+p.Name+".json", p)
	if err != nil {
		return "", err
	}
	out, err := c.Client(2*time.Minute, "runp", path)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(out)
	c.tasks.add(id)
	return id, nil
}

// RunContainer creates and starts a container in the pod, waits (at most
// timeout) until it exits, and returns its log; a non-zero exit is an
// error with the log.
func (c *CRI) RunContainer(podID string, p *Pod, ctr *Container, timeout time.Duration) (string, error) {
	podPath, err := c.writeJSON("pod-"+p.Name+".json", p)
	if err != nil {
		return "", err
	}
	ctrPath, err := c.writeJSON("ctr-"+p.Name+"-"+ctr.Name+".json", ctr)
	if err != nil {
		return "", err
	}
	return c.Client(timeout, "run", "-pod", podPath, podID, ctrPath)
}

// RemovePod stops and removes a pod.
func (c *CRI) RemovePod(id string) error {
	_, err := c.Client(time.Minute, "rmp", id)
	return err
}

// Pods lists the pods containerd has: "ID STATE HANDLER IP NAME" lines.
func (c *CRI) Pods() ([]string, error) {
	out, err := c.Client(30*time.Second, "pods")
	if err != nil {
		return nil, err
	}
	if out = strings.TrimSpace(out); out == "" {
		return nil, nil
	}
	return strings.Split(out, "\n"), nil
}

func (c *CRI) writeJSON(name string, v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir, name)
	return path, os.WriteFile(path, b, 0o644)
}

// InNS returns a command that runs in the CRI's namespace.
func (c *CRI) InNS(args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + c.NSPath}, args...)...)
}
