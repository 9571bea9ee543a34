package runscflags

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/node"
)

// A node's files sit beside its tree file PATH, in a directory only root
// on the host writes: PATH.sock, the socket of the node's allocator (the
// trusted side, one process per node: ServeNode); PATH.lock, which that
// process holds while it runs; PATH.log, what it logs; PATH.state, the
// classes it admitted, for one started after it (node.Allocator.Adopt).
const (
	SocketSuffix = ".sock"
	LockSuffix   = ".lock"
	LogSuffix    = ".log"
	StateSuffix  = ".state"
)

// NodeIdleExit is how long a node's allocator runs with no sandbox seated
// and no request before it exits; the next join starts it again.
const NodeIdleExit = 10 * time.Second

// NodeSeat is a sandbox's class of its node in one direction, as runsc
// joined it on the host: what the sandbox needs, with its seat's
// descriptor, to take its place (AttachNode).
type NodeSeat struct {
	// Ingress: the class shapes what the sandbox receives.
	Ingress bool
	// Path is the tree file's; Slot the node's slot.
	Path string
	Slot int
	// ID, Parent, Rate, Ceil and Prio are the class's (htb's words), as
	// the node admitted it.
	ID, Parent uint32
	Rate, Ceil uint64
	Prio       uint8
	// File is the seat's index in what runsc hands the sandbox.
	File int
}

// class returns the seat's class.
func (s NodeSeat) class() htb.ClassConfig {
	return htb.ClassConfig{ID: s.ID, Parent: s.Parent, Rate: s.Rate, Ceil: s.Ceil, Prio: s.Prio}
}

// JoinNode joins the sandbox whose process on the host is pid to its
// node in each direction the Config gives one: it asks the node's
// allocator (started if none runs) to admit the sandbox's class under
// the tree file's tree (put in force where it changed), with a classid
// of the parent's major and minor node.AutoMinor plus the slot, naming
// the process by a pidfd, so that the slot is freed the moment it exits.
// It returns the seats and their descriptors to hand the sandbox, which
// the caller closes once handed. runsc calls it on the host before it
// touches the sandbox's network namespace, so that a join refused leaves
// the namespace as it found it.
func (c *Config) JoinNode(pid int) ([]NodeSeat, []*os.File, error) {
	var seats []NodeSeat
	var files []*os.File
	for _, d := range []Ceiling{EgressCeiling, IngressCeiling} {
		if !c.InNode(d) {
			continue
		}
		s, f, err := c.joinNode(d, pid)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, nil, fmt.Errorf("--%s=%s: %w", nodeFlagNames[d].path, *c.nodeOf(d).path, err)
		}
		seats, files = append(seats, s), append(files, f)
	}
	return seats, files, nil
}

// joinNode is JoinNode for direction d.
func (c *Config) joinNode(d Ceiling, pid int) (NodeSeat, *os.File, error) {
	path := *c.nodeOf(d).path
	text, tree, err := readTree(path)
	if err != nil {
		return NodeSeat{}, nil, err
	}
	cls, err := c.nodeClass(d, tree, 0)
	if err != nil {
		return NodeSeat{}, nil, err
	}
	cls.ID = cls.Parent &^ 0xffff // the node gives the minor
	var ans htb.ClassConfig
	var slot int
	var seat *os.File
	err = callNode(path, true, func(cl node.Client) error {
		pidfd, err := node.OpenPidFD(pid)
		if err != nil {
			return err
		}
		defer pidfd.Close()
		slot, ans, seat, err = cl.Join(text, cls, pidfd)
		return err
	})
	if err != nil {
		return NodeSeat{}, nil, err
	}
	return NodeSeat{Ingress: d == IngressCeiling, Path: path, Slot: slot, ID: ans.ID, Parent: ans.Parent, Rate: ans.Rate, Ceil: ans.Ceil, Prio: ans.Prio}, seat, nil
}

// readTree reads and parses the tree file at path.
func readTree(path string) (string, htb.Script, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return "", htb.Script{}, fmt.Errorf("reading the node's tree: %w", err)
	}
	tree, err := htb.ParseScript(string(text))
	if err != nil {
		return "", htb.Script{}, fmt.Errorf("the node's tree %s: %w", path, err)
	}
	if len(tree.Classes) == 0 {
		return "", htb.Script{}, fmt.Errorf("the node's tree %s has no class: give at least its root, such as \"class root classid 1:1 rate 10gbit\"", path)
	}
	return tree.String(), tree, nil
}

// callNode calls f with the client of the allocator of the node whose
// tree file is path. Where none answers and start is set, it starts one
// (StartNodeAllocator) and waits for it; f is tried again on a
// connection that failed (an allocator exiting as it was reached), not
// on an answer.
func callNode(path string, start bool, f func(node.Client) error) error {
	sock := path + SocketSuffix
	if len(sock) >= len(unix.RawSockaddrUnix{}.Path) {
		return fmt.Errorf("the node's socket %s is %d bytes, past the %d a unix socket's path may have: put the tree file in a shorter path", sock, len(sock), len(unix.RawSockaddrUnix{}.Path)-1)
	}
	cl := node.Client{Path: sock}
	var err error
	for try := 0; try < 3; try++ {
		err = f(cl)
		if err == nil || !unreachable(err) {
			return err
		}
		if !start {
			return errNoAllocator
		}
		if err := StartNodeAllocator(path); err != nil {
			return fmt.Errorf("starting the node's allocator: %w", err)
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if c, err := net.Dial("unix", sock); err == nil {
				c.Close()
				break
			}
		}
	}
	return fmt.Errorf("the node's allocator did not answer at %s (its log: %s): %w", sock, path+LogSuffix, err)
}

// errNoAllocator says no allocator runs for a node.
var errNoAllocator = errors.New("no allocator runs for the node")

// unreachable says whether err is a connection to the allocator that
// could not be made (none listening, or it closed as we came): only
// then is a request tried again, never once it was sent (a join must
// not be made twice).
func unreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// StartNodeAllocator starts the allocator of the node whose tree file is
// path, as a process of its own that outlives the caller: by default
// this executable with the arguments `qdisc node PATH serve` (runsc's),
// in a session of its own, logging to PATH.log. A runtime that is not
// runsc sets its own.
var StartNodeAllocator = func(path string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	log, err := os.OpenFile(path+LogSuffix, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(exe, "qdisc", "node", path, "serve")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// ServeNode runs the allocator of the node whose tree file is path until
// it has had no sandbox and no request for idle: it holds PATH.lock (an
// allocator already running there: it returns at once, nil), answers on
// PATH.sock (root's alone) and steps the node every node.Period.
func ServeNode(path string, idle time.Duration) error { return serveNode(path, idle, true) }

// serveNode is ServeNode, keeping the admitted classes in PATH.state
// where persist is set (tests in this process, whose temporary
// directories go as they end, keep none).
func serveNode(path string, idle time.Duration, persist bool) error {
	_, tree, err := readTree(path)
	if err != nil {
		return err
	}
	lock, err := os.OpenFile(path+LockSuffix, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil // another serves the node
		}
		return fmt.Errorf("locking %s: %w", path+LockSuffix, err)
	}
	a, err := node.NewAllocator(tree, node.DefaultSlots)
	if err != nil {
		return err
	}
	defer a.Close()
	// The sandboxes an allocator before this one seated, still running:
	// their guarantees count for the joins to come.
	if persist {
		if _, err := a.Adopt(path+StateSuffix, node.Now()); err != nil {
			return err
		}
		if err := a.Persist(path + StateSuffix); err != nil {
			return err
		}
	}
	sock := path + SocketSuffix
	os.Remove(sock) // a socket left by an allocator that died
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fmt.Errorf("the node's socket: %w", err)
	}
	l.SetUnlinkOnClose(false)
	if err := os.Chmod(sock, 0o600); err != nil {
		l.Close()
		return err
	}
	stepper := node.StepEvery(a, tcpip.NewStdClock(), node.Now)
	defer stepper.Close()
	done := make(chan error, 1)
	go func() { done <- node.Serve(l, a, node.Now) }()
	for last, reqs := time.Now(), uint64(0); ; {
		select {
		case err := <-done:
			os.Remove(sock)
			return err
		case <-time.After(idle / 4):
		}
		if n := a.Requests(); a.Held() > 0 || n != reqs {
			last, reqs = time.Now(), n
			continue
		}
		if time.Since(last) >= idle {
			// The socket goes first: a join from then on starts
			// another allocator, which waits for the lock.
			os.Remove(sock)
			l.Close()
			<-done
			return nil
		}
	}
}

// ShowNode prints the node whose tree file is path as `tc -s class show`
// prints an htb's: every class, each sandbox's with its slot, process,
// last publish and whether parked, after a warning for each class whose
// children are guaranteed more than its rate. It puts a changed tree
// file in force first (the running sandboxes' shares follow at the
// allocator's next step). Where no allocator runs, it prints the tree
// alone. `runsc qdisc node PATH`.
func ShowNode(path string) (string, error) {
	text, tree, err := readTree(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	var show string
	var warnings []string
	err = callNode(path, false, func(cl node.Client) error {
		var err error
		show, warnings, err = cl.Show(text)
		return err
	})
	switch {
	case errors.Is(err, errNoAllocator):
		a, err := node.NewAllocator(tree, 1)
		if err != nil {
			return "", err
		}
		show = a.Show(node.Now()) + "(no sandbox: no allocator runs for the node)\n"
		a.Close()
	case err != nil:
		return "", fmt.Errorf("%s: %w", path, err)
	}
	var warn strings.Builder
	for _, o := range warnings {
		fmt.Fprintf(&warn, "warning: %s\n", o)
	}
	return fmt.Sprintf("node %s:\n%s%s", path, warn.String(), show), nil
}

// ShowNodes is ShowNode for each node the Config gives (--qdisc-node,
// --qdisc-ingress-node): for `runsc qdisc node` with no path.
func (c *Config) ShowNodes() (string, error) {
	var out strings.Builder
	for _, d := range []Ceiling{EgressCeiling, IngressCeiling} {
		if !c.InNode(d) {
			continue
		}
		show, err := ShowNode(*c.nodeOf(d).path)
		if err != nil {
			return "", fmt.Errorf("--%s: %w", nodeFlagNames[d].path, err)
		}
		out.WriteString(show)
	}
	if out.Len() == 0 {
		return "", fmt.Errorf("no node: give the node's tree file (runsc qdisc node PATH), or --%s or --%s", FlagNode, FlagIngressNode)
	}
	return out.String(), nil
}

// EvictNode evicts class id (tc's major:minor) from the node whose tree
// file is path: a parked sandbox's, whose guarantee then no longer
// counts when others join. `runsc qdisc node PATH evict CLASSID`.
func EvictNode(path, id string) error {
	c, err := htb.ParseClass("root classid " + id + " rate 1kbit")
	if err != nil {
		return fmt.Errorf("evict %q: give the sandbox's classid as runsc qdisc node shows it, such as 1:8002", id)
	}
	return callNode(path, false, func(cl node.Client) error { return cl.Evict(c.ID) })
}

// NodeCommand runs `runsc qdisc node ARGS`: PATH... shows each node;
// PATH evict CLASSID evicts a parked sandbox's class; PATH serve runs
// the node's allocator (runsc starts it; an operator need not).
func NodeCommand(c *Config, args []string) (string, error) {
	switch {
	case len(args) == 0:
		return c.ShowNodes()
	case len(args) == 3 && args[1] == "evict":
		if err := EvictNode(args[0], args[2]); err != nil {
			return "", err
		}
		return fmt.Sprintf("node %s: evicted class %s\n", args[0], args[2]), nil
	case len(args) == 2 && args[1] == "serve":
		return "", ServeNode(args[0], NodeIdleExit)
	}
	var out strings.Builder
	for _, path := range args {
		if path == "evict" || path == "serve" {
			return "", fmt.Errorf("usage: runsc qdisc node [PATH ...] | PATH evict CLASSID | PATH serve")
		}
		show, err := ShowNode(path)
		if err != nil {
			return "", err
		}
		out.WriteString(show)
	}
	return out.String(), nil
}

// ShowNodesOf is what `runsc qdisc show` prints after a sandbox's own
// shaping: every class of each node the Config gives (runsc.toml's
// --qdisc-node, which every runsc command of a shim reads) or, where it
// gives none (flags given to `runsc run` alone), each node the
// sandbox's show names ("node PATH class htb ...": the sandbox's word,
// so only shown, never put in force). A node whose allocator does not
// answer is left out.
func (c *Config) ShowNodesOf(sandboxShow string) string {
	var paths []string
	for _, d := range []Ceiling{EgressCeiling, IngressCeiling} {
		if c.InNode(d) {
			paths = append(paths, *c.nodeOf(d).path)
		}
	}
	if len(paths) == 0 {
		for _, line := range strings.Split(sandboxShow, "\n") {
			_, rest, ok := strings.Cut(line, ": node ")
			if !ok {
				continue
			}
			if path, _, ok := strings.Cut(rest, " class htb "); ok && !slices.Contains(paths, path) {
				paths = append(paths, path)
			}
		}
	}
	var out strings.Builder
	for _, path := range paths {
		var show string
		if err := callNode(path, false, func(cl node.Client) error {
			var err error
			show, _, err = cl.Show("")
			return err
		}); err == nil {
			fmt.Fprintf(&out, "node %s:\n%s", path, show)
		}
	}
	return out.String()
}
