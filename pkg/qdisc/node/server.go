package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// The runtime speaks to a node's Allocator over a unix socket only root
// on the host reaches (no sandbox holds it): one request a connection, a
// JSON line, and one answer, a JSON line; a join's request carries the
// sandbox's pidfd and its answer the seat's descriptor (SCM_RIGHTS).

// request is what the runtime asks.
type request struct {
	// Op is "join", "tree", "show" or "evict".
	Op string `json:"op"`
	// Tree, if not empty, is the operator's tree as tc's words, put in
	// force (where it changed) before the op.
	Tree string `json:"tree,omitempty"`
	// Class is the class to join (its ID's minor 0: the node gives it).
	Class htb.ClassConfig `json:"class,omitzero"`
	// ID is the class to evict.
	ID uint32 `json:"id,omitempty"`
}

// answer is what the Allocator answers.
type answer struct {
	Error    string          `json:"error,omitempty"`
	Slot     int             `json:"slot,omitempty"`
	Class    htb.ClassConfig `json:"class,omitzero"`
	Show     string          `json:"show,omitempty"`
	Warnings []string        `json:"warnings,omitempty"`
}

// maxMessage bounds a request or an answer.
const maxMessage = 4 << 20

// ioTimeout bounds one request's exchange.
const ioTimeout = 5 * time.Second

// Serve answers the runtime's requests on l for a until l is closed.
// now gives the host's CLOCK_MONOTONIC (Now). Each connection is served
// on a goroutine of its own that ends with it.
func Serve(l *net.UnixListener, a *Allocator, now func() int64) error {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		go serveConn(c, a, now)
	}
}

// serveConn answers one request on c and closes it.
func serveConn(c *net.UnixConn, a *Allocator, now func() int64) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(ioTimeout))
	line, files, err := readMessage(c)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var ans answer
	var give *os.File
	if err == nil {
		ans, give, err = handle(a, now, line, files)
	}
	if err != nil {
		ans = answer{Error: err.Error()}
	}
	writeMessage(c, ans, give)
	if give != nil {
		give.Close()
	}
}

// handle carries out one request.
func handle(a *Allocator, now func() int64, line []byte, files []*os.File) (answer, *os.File, error) {
	a.requests.Add(1)
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return answer{}, nil, fmt.Errorf("node: a request that is not one: %v", err)
	}
	var ans answer
	if req.Tree != "" {
		tree, err := htb.ParseScript(req.Tree)
		if err != nil {
			return answer{}, nil, fmt.Errorf("node: the node's tree: %w", err)
		}
		if a.Tree().String() != tree.String() {
			if ans.Warnings, err = a.SetTree(tree); err != nil {
				return answer{}, nil, err
			}
		} else {
			ans.Warnings = a.Overcommitted()
		}
	}
	switch req.Op {
	case "tree":
		return ans, nil, nil
	case "show":
		ans.Show = a.Show(now())
		return ans, nil, nil
	case "evict":
		return ans, nil, a.Evict(req.ID, now())
	case "join":
		if len(files) != 1 {
			return answer{}, nil, fmt.Errorf("node: a join carries the sandbox's pidfd, and this one carries %d descriptors", len(files))
		}
		p, err := NewPidFD(files[0])
		files[0] = nil
		if err != nil {
			return answer{}, nil, err
		}
		slot, c, seat, err := a.Join(req.Class, p, now())
		if err != nil {
			return answer{}, nil, err
		}
		ans.Slot, ans.Class = slot, c
		return ans, seat, nil
	}
	return answer{}, nil, fmt.Errorf("node: no request %q: join, tree, show or evict", req.Op)
}

// readMessage reads one JSON line from c and the descriptors sent with
// it.
func readMessage(c *net.UnixConn) ([]byte, []*os.File, error) {
	var line []byte
	var files []*os.File
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for !bytes.HasSuffix(line, []byte("\n")) {
		n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
		if oobn > 0 {
			files = append(files, filesOf(oob[:oobn])...)
		}
		line = append(line, buf[:n]...)
		if err != nil || n == 0 {
			for _, f := range files {
				f.Close()
			}
			if err == nil {
				err = fmt.Errorf("node: the message ended before its end of line")
			}
			return nil, nil, err
		}
		if len(line) > maxMessage {
			for _, f := range files {
				f.Close()
			}
			return nil, nil, fmt.Errorf("node: a message past %d bytes", maxMessage)
		}
	}
	return line, files, nil
}

// filesOf returns the descriptors a control message carries.
func filesOf(oob []byte) []*os.File {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "received"))
		}
	}
	return files
}

// writeMessage writes v as a JSON line to c, with f's descriptor if f is
// not nil.
func writeMessage(c *net.UnixConn, v any, f *os.File) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	var oob []byte
	if f != nil {
		oob = unix.UnixRights(int(f.Fd()))
	}
	n, _, err := c.WriteMsgUnix(line, oob, nil)
	if err != nil || n == len(line) {
		return err // no write of nothing: the peer may have answered and gone
	}
	_, err = c.Write(line[n:])
	return err
}

// Client is the runtime's side of a node's Allocator, at a socket path.
type Client struct {
	Path string
}

// call sends req (with f's descriptor, if not nil) and returns the
// answer and the descriptor it carried, if any.
func (cl Client) call(req request, f *os.File) (answer, *os.File, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: cl.Path, Net: "unix"})
	if err != nil {
		return answer{}, nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(ioTimeout))
	if err := writeMessage(c, req, f); err != nil {
		return answer{}, nil, fmt.Errorf("node: asking the node's allocator at %s: %w", cl.Path, err)
	}
	line, files, err := readMessage(c)
	if err != nil {
		return answer{}, nil, fmt.Errorf("node: the node's allocator at %s did not answer: %w", cl.Path, err)
	}
	var ans answer
	if err := json.Unmarshal(line, &ans); err != nil {
		for _, f := range files {
			f.Close()
		}
		return answer{}, nil, fmt.Errorf("node: the node's allocator at %s answered %q: %v", cl.Path, line, err)
	}
	var got *os.File
	for i, f := range files {
		if i == 0 {
			got = f
		} else {
			f.Close()
		}
	}
	if ans.Error != "" {
		if got != nil {
			got.Close()
		}
		return ans, nil, errors.New(ans.Error)
	}
	return ans, got, nil
}

// Join asks the Allocator to admit a sandbox, whose process pidfd names,
// as a leaf of class c under tree (tc's words, put in force where they
// changed). It returns the slot, the class as admitted and the seat's
// descriptor to hand the sandbox.
func (cl Client) Join(tree string, c htb.ClassConfig, pidfd *os.File) (int, htb.ClassConfig, *os.File, error) {
	ans, seat, err := cl.call(request{Op: "join", Tree: tree, Class: c}, pidfd)
	if err != nil {
		return 0, c, nil, err
	}
	if seat == nil {
		return 0, c, nil, fmt.Errorf("node: the node's allocator at %s admitted the sandbox but sent no seat", cl.Path)
	}
	return ans.Slot, ans.Class, seat, nil
}

// SetTree puts tree in force where it changed and returns the
// Allocator's warnings (Overcommitted).
func (cl Client) SetTree(tree string) ([]string, error) {
	ans, _, err := cl.call(request{Op: "tree", Tree: tree}, nil)
	return ans.Warnings, err
}

// Show puts tree in force where it changed (if not empty) and returns
// the node's classes (Allocator.Show) and the warnings.
func (cl Client) Show(tree string) (string, []string, error) {
	ans, _, err := cl.call(request{Op: "show", Tree: tree}, nil)
	return ans.Show, ans.Warnings, err
}

// Evict asks the Allocator to evict class id, a parked sandbox's.
func (cl Client) Evict(id uint32) error {
	_, _, err := cl.call(request{Op: "evict", ID: id}, nil)
	return err
}
