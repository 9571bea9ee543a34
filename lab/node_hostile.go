package lab

// This file finds what a node's sandbox and its allocator hold on the
// host, for tests that play a compromised sandbox (issue 47): the seat a
// sandbox's Sentry maps, and the node's allocator process.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// SeatLinkPrefix begins the target of a /proc/PID/fd link to a node's
// seat: the memfd the node's allocator names "netqdisc-seat:CLASSID:slotN"
// (pkg/qdisc/node).
const SeatLinkPrefix = "/memfd:netqdisc-seat:"

// OpenNodeSeats opens, read-write, every seat of a node the sandbox's
// process (runsc state's PID: the Sentry) holds, through /proc/PID/fd:
// each a second descriptor of the same memfd, as a Sentry that passed
// its own on would give, so that a test can write in the page whatever a
// compromised Sentry could. Each file's Name is the link's target. The
// caller closes them.
func (s *Sandbox) OpenNodeSeats() ([]*os.File, error) {
	_, pid, err := s.State()
	if err != nil {
		return nil, err
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("the sandbox's process %d: %v", pid, err)
	}
	var files []*os.File
	for _, e := range ents {
		link := filepath.Join(dir, e.Name())
		target, err := os.Readlink(link)
		if err != nil || !strings.HasPrefix(target, SeatLinkPrefix) {
			continue // closed since it was listed, or not a seat
		}
		fd, err := unix.Open(link, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, fmt.Errorf("opening the sandbox's seat %s (%s): %v", link, target, err)
		}
		files = append(files, os.NewFile(uintptr(fd), target))
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("the sandbox's process %d holds no seat of a node (no link in %s to %s...)", pid, dir, SeatLinkPrefix)
	}
	return files, nil
}

// NodeAllocatorPid returns the PID of the allocator of the node whose
// tree file is tree: the process runsc started as `runsc qdisc node TREE
// serve`, found by its command line. It returns 0 where none runs.
func NodeAllocatorPid(tree string) (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	want := []byte("\x00qdisc\x00node\x00" + tree + "\x00serve\x00")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && bytes.HasSuffix(cmdline, want) && Alive(pid) {
			return pid, nil
		}
	}
	return 0, nil
}
