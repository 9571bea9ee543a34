package node

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Process is a sandbox's process as the runtime names it to the
// Allocator: it holds the sandbox's slot while Alive, and the Allocator
// frees the slot (and its guarantee) the moment it is not.
type Process interface {
	// Alive reports whether the process still runs (not exited, not a
	// zombie).
	Alive() bool
	// PID is its pid on the host, for show.
	PID() int
	// Close releases the handle.
	Close() error
}

// PidFD is a Process held by a pidfd (pidfd_open): it names the process
// itself, not its pid, so a pid the kernel gives another process later
// never keeps a dead sandbox's slot, and no /proc read is needed.
type PidFD struct {
	fd  int
	pid int
}

// OpenPidFD opens a pidfd for process pid: what the runtime, which
// started the sandbox and knows it runs, hands the Allocator with a join.
func OpenPidFD(pid int) (*os.File, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("node: pidfd_open(%d): %w", pid, err)
	}
	return os.NewFile(uintptr(fd), fmt.Sprintf("pidfd:%d", pid)), nil
}

// NewPidFD returns the Process that pidfd f names; it owns f's
// descriptor from then on. A descriptor that is not a pidfd is refused.
func NewPidFD(f *os.File) (*PidFD, error) {
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("node: a sandbox's pidfd: %w", err)
	}
	pid, err := pidOfFD(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &PidFD{fd: fd, pid: pid}, nil
}

// pidOfFD reads the pid a pidfd names from /proc/self/fdinfo (its Pid:
// line; -1 once the process is reaped).
func pidOfFD(fd int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		return 0, fmt.Errorf("node: a sandbox's pidfd: %w", err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("Pid:")); ok {
			pid, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				break
			}
			return pid, nil
		}
	}
	return 0, fmt.Errorf("node: descriptor %d is not a pidfd: give the sandbox's process as pidfd_open(2) names it", fd)
}

// Alive implements Process.Alive: a pidfd polls readable once its
// process has exited.
func (p *PidFD) Alive() bool {
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 0
	}
}

// FD returns the pidfd, for the Allocator's epoll.
func (p *PidFD) FD() int { return p.fd }

// PID implements Process.PID.
func (p *PidFD) PID() int { return p.pid }

// Close implements Process.Close.
func (p *PidFD) Close() error { return unix.Close(p.fd) }

// startTime reads process pid's start time (clock ticks since boot) from
// /proc/PID/stat: after the command's name in parentheses (which may
// hold any byte, so the last ')' ends it), the twentieth field. With the
// pid, it names a process across a pid the kernel gives another later.
func startTime(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return 0, false
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	return start, err == nil
}
