// Command cri drives a container runtime through the Kubernetes CRI API
// (k8s.io/cri-api runtime/v1) over its socket, as the kubelet does, for the
// end-to-end tests: crictl is neither in Debian nor a Go module here.
//
//	cri [-addr unix:///run/containerd/containerd.sock] [-timeout 2m] COMMAND
//
//	version                          the runtime's name and version
//	runp POD.json                    run a pod sandbox; prints its ID
//	run -pod POD.json POD_ID CTR.json
//	                                 create and start a container in the pod,
//	                                 wait until it exits, print its log, and
//	                                 exit with its exit code (the container
//	                                 is removed after unless -keep)
//	pods                             list pod sandboxes: ID STATE HANDLER IP NAME
//	inspectp POD_ID                  a pod's status as JSON
//	stopp POD_ID...                  stop pods
//	rmp [-all] POD_ID...             stop and remove pods (every pod with -all)
//
// POD.json is {"name", "namespace", "uid", "runtime_handler",
// "annotations", "labels", "log_directory", "cgroup_parent", "hostname"};
// CTR.json is {"name", "image", "command", "args", "env", "annotations",
// "log_path"} (log_path relative to the pod's log_directory).
//
// The runtime's errors are printed verbatim ("cri: RunPodSandbox: " and
// the runtime's message), so a pod refused by the runtime shows why.
// Errors of cri itself exit 125; run exits with the container's code.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Pod is POD.json.
type Pod struct {
	Name           string            `json:"name"`
	Namespace      string            `json:"namespace"`
	UID            string            `json:"uid"`
	Attempt        uint32            `json:"attempt"`
	RuntimeHandler string            `json:"runtime_handler"`
	Annotations    map[string]string `json:"annotations"`
	Labels         map[string]string `json:"labels"`
	LogDirectory   string            `json:"log_directory"`
	CgroupParent   string            `json:"cgroup_parent"`
	Hostname       string            `json:"hostname"`
}

// Container is CTR.json.
type Container struct {
	Name        string            `json:"name"`
	Image       string            `json:"image"`
	Command     []string          `json:"command"`
	Args        []string          `json:"args"`
	Env         map[string]string `json:"env"`
	Annotations map[string]string `json:"annotations"`
	Labels      map[string]string `json:"labels"`
	LogPath     string            `json:"log_path"`
}

const exitUsage, exitError = 2, 125

func main() {
	def := os.Getenv("CONTAINER_RUNTIME_ENDPOINT")
	if def == "" {
		def = "unix:///run/containerd/containerd.sock"
	}
	addr := flag.String("addr", def, "the runtime's CRI socket ($CONTAINER_RUNTIME_ENDPOINT)")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up on the command after this long")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: cri [-addr unix:///path.sock] [-timeout 2m] version|runp|run|pods|inspectp|stopp|rmp ...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(exitUsage)
	}
	if !strings.Contains(*addr, "://") {
		*addr = "unix://" + *addr
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fail(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c := &client{rt: runtimeapi.NewRuntimeServiceClient(conn)}
	cmd, args := flag.Arg(0), flag.Args()[1:]
	code := 0
	switch cmd {
	case "version":
		err = c.version(ctx)
	case "runp":
		err = c.runp(ctx, args)
	case "run":
		code, err = c.run(ctx, args)
	case "pods":
		err = c.pods(ctx)
	case "inspectp":
		err = c.inspectp(ctx, args)
	case "stopp":
		err = c.stopp(ctx, args)
	case "rmp":
		err = c.rmp(ctx, args)
	default:
		flag.Usage()
		os.Exit(exitUsage)
	}
	if err != nil {
		fail(err)
	}
	os.Exit(code)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cri:", err)
	os.Exit(exitError)
}

// rpcError names the call and gives the runtime's message verbatim.
func rpcError(call string, err error) error {
	if s, ok := status.FromError(err); ok {
		return fmt.Errorf("%s: %s", call, s.Message())
	}
	return fmt.Errorf("%s: %w", call, err)
}

type client struct {
	rt runtimeapi.RuntimeServiceClient
}

func (c *client) version(ctx context.Context) error {
	v, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return rpcError("Version", err)
	}
	fmt.Printf("%s %s (CRI %s)\n", v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion)
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func (p *Pod) config() *runtimeapi.PodSandboxConfig {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: p.Name, Namespace: p.Namespace, Uid: p.UID, Attempt: p.Attempt},
		Hostname:     p.Hostname,
		LogDirectory: p.LogDirectory,
		Labels:       p.Labels,
		Annotations:  p.Annotations,
		Linux:        &runtimeapi.LinuxPodSandboxConfig{CgroupParent: p.CgroupParent},
	}
	if cfg.Metadata.Namespace == "" {
		cfg.Metadata.Namespace = "default"
	}
	if cfg.Metadata.Uid == "" {
		cfg.Metadata.Uid = cfg.Metadata.Namespace + "-" + p.Name
	}
	return cfg
}

func readPod(path string) (*Pod, error) {
	var p Pod
	if err := readJSON(path, &p); err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, fmt.Errorf("%s: the pod has no name", path)
	}
	return &p, nil
}

func (c *client) runp(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return errors.New("usage: runp POD.json")
	}
	p, err := readPod(args[0])
	if err != nil {
		return err
	}
	if p.LogDirectory != "" {
		if err := os.MkdirAll(p.LogDirectory, 0o755); err != nil {
			return err
		}
	}
	r, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: p.config(), RuntimeHandler: p.RuntimeHandler})
	if err != nil {
		return rpcError("RunPodSandbox", err)
	}
	fmt.Println(r.PodSandboxId)
	return nil
}

func (c *client) run(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	podFile := fs.String("pod", "", "the pod's POD.json (its sandbox config)")
	keep := fs.Bool("keep", false, "leave the exited container in place")
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	if *podFile == "" || fs.NArg() != 2 {
		return 0, errors.New("usage: run -pod POD.json POD_ID CTR.json")
	}
	p, err := readPod(*podFile)
	if err != nil {
		return 0, err
	}
	podID := fs.Arg(0)
	var ctr Container
	if err := readJSON(fs.Arg(1), &ctr); err != nil {
		return 0, err
	}
	if ctr.Name == "" || ctr.Image == "" {
		return 0, fmt.Errorf("%s: a container needs a name and an image", fs.Arg(1))
	}
	if ctr.LogPath == "" {
		ctr.LogPath = ctr.Name + ".log"
	}
	var env []*runtimeapi.KeyValue
	for _, k := range sortedKeys(ctr.Env) {
		env = append(env, &runtimeapi.KeyValue{Key: k, Value: ctr.Env[k]})
	}
	cr, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: podID,
		Config: &runtimeapi.ContainerConfig{
			Metadata:    &runtimeapi.ContainerMetadata{Name: ctr.Name},
			Image:       &runtimeapi.ImageSpec{Image: ctr.Image},
			Command:     ctr.Command,
			Args:        ctr.Args,
			Envs:        env,
			Labels:      ctr.Labels,
			Annotations: ctr.Annotations,
			LogPath:     ctr.LogPath,
			Linux:       &runtimeapi.LinuxContainerConfig{},
		},
		SandboxConfig: p.config(),
	})
	if err != nil {
		return 0, rpcError("CreateContainer", err)
	}
	id := cr.ContainerId
	if !*keep {
		defer func() {
			// Its own time: the command's may be spent.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id})
			c.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
		}()
	}
	if _, err := c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		return 0, rpcError("StartContainer", err)
	}
	var st *runtimeapi.ContainerStatus
	for {
		r, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			return 0, rpcError("ContainerStatus", err)
		}
		if st = r.Status; st.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			break
		}
		select {
		case <-ctx.Done():
			c.rt.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id})
			return 0, fmt.Errorf("container %s (%s) still %v: %w", ctr.Name, id, st.State, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := printLog(os.Stdout, st.LogPath); err != nil {
		fmt.Fprintf(os.Stderr, "cri: the container's log: %v\n", err)
	}
	if st.ExitCode != 0 {
		fmt.Fprintf(os.Stderr, "cri: container %s exited with code %d (%s) %s\n", ctr.Name, st.ExitCode, st.Reason, st.Message)
	}
	return int(st.ExitCode), nil
}

// printLog writes a CRI log file's content: lines "TIME STREAM P|F TEXT",
// where P continues the line and F ends it.
func printLog(w io.Writer, path string) error {
	if path == "" {
		return errors.New("the runtime gave no log path")
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 16<<20)
	for s.Scan() {
		parts := strings.SplitN(s.Text(), " ", 4)
		if len(parts) < 3 {
			continue
		}
		text := ""
		if len(parts) == 4 {
			text = parts[3]
		}
		if parts[2] != "P" {
			text += "\n"
		}
		io.WriteString(w, text)
	}
	return s.Err()
}

func (c *client) pods(ctx context.Context) error {
	r, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return rpcError("ListPodSandbox", err)
	}
	for _, p := range r.Items {
		ip := "-"
		if s, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: p.Id}); err == nil && s.Status.GetNetwork().GetIp() != "" {
			ip = s.Status.Network.Ip
		}
		fmt.Printf("%s %s %s %s %s\n", p.Id, p.State, orDash(p.RuntimeHandler), ip, p.Metadata.GetName())
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c *client) inspectp(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return errors.New("usage: inspectp POD_ID")
	}
	r, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: args[0]})
	if err != nil {
		return rpcError("PodSandboxStatus", err)
	}
	s := r.Status
	out := map[string]any{
		"id":              s.Id,
		"state":           s.State.String(),
		"name":            s.Metadata.GetName(),
		"runtime_handler": s.RuntimeHandler,
		"ip":              s.Network.GetIp(),
		"annotations":     s.Annotations,
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}

func (c *client) stopp(ctx context.Context, args []string) error {
	var errs []error
	for _, id := range args {
		if _, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			errs = append(errs, rpcError("StopPodSandbox "+id, err))
		}
	}
	return errors.Join(errs...)
}

func (c *client) rmp(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rmp", flag.ContinueOnError)
	all := fs.Bool("all", false, "every pod of the runtime")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ids := fs.Args()
	if *all {
		r, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			return rpcError("ListPodSandbox", err)
		}
		for _, p := range r.Items {
			ids = append(ids, p.Id)
		}
	}
	var errs []error
	for _, id := range ids {
		if _, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			errs = append(errs, rpcError("StopPodSandbox "+id, err))
			continue
		}
		if _, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			errs = append(errs, rpcError("RemovePodSandbox "+id, err))
			continue
		}
		fmt.Println(id)
	}
	return errors.Join(errs...)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
