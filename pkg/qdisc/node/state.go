package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// An allocator keeps the classes it admitted in a state file beside the
// node's tree (root's alone, never a sandbox's), so that one started
// again (it was killed, or crashed) knows the guarantees of the
// sandboxes still running: it adopts each whose process lives (Adopt),
// and a join must fit beside them. An adopted sandbox keeps its class
// but no seat (its descriptor went with the allocator before): it holds
// itself to its rate, as a Member does when its allocator stops writing,
// until it exits.

// savedSeat is a seated class as the state file keeps it.
type savedSeat struct {
	Slot  int             `json:"slot"`
	Class htb.ClassConfig `json:"class"`
	PID   int             `json:"pid"`
	Start uint64          `json:"start"` // the process's start time
}

// Persist keeps the seated classes in the file at path from now on,
// rewritten (whole, by rename) at each join and each slot freed.
func (a *Allocator) Persist(path string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.statePath = path
	return a.saveLocked()
}

// saveLocked writes the state file, if any.
// +checklocks:a.mu
func (a *Allocator) saveLocked() error {
	if a.statePath == "" {
		return nil
	}
	var out []savedSeat
	for _, s := range a.seats {
		if s != nil {
			out = append(out, savedSeat{Slot: s.slot, Class: s.class, PID: s.proc.PID(), Start: s.start})
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(a.statePath), filepath.Base(a.statePath)+".*")
	if err != nil {
		return fmt.Errorf("node: the allocator's state: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("node: the allocator's state: %w", err)
	}
	tmp.Close()
	if err := os.Rename(tmp.Name(), a.statePath); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("node: the allocator's state: %w", err)
	}
	return nil
}

// Adopt seats the classes the state file at path kept whose process
// still runs (the same pid and start time: not a pid given another
// process since), as of now, and returns how many. A missing file is
// none; an entry that does not fit (its slot taken, out of range) is
// left out.
func (a *Allocator) Adopt(path string, now int64) (int, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("node: the allocator's state: %w", err)
	}
	var saved []savedSeat
	if err := json.Unmarshal(b, &saved); err != nil {
		return 0, fmt.Errorf("node: the allocator's state %s is corrupt (%v): remove it, and restart the node's sandboxes so that they are counted again", path, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, e := range saved {
		if e.Slot < 0 || e.Slot >= len(a.seats) || a.seats[e.Slot] != nil || e.PID <= 0 {
			continue
		}
		f, err := OpenPidFD(e.PID)
		if err != nil {
			continue
		}
		p, err := NewPidFD(f)
		if err != nil {
			continue
		}
		if start, ok := startTime(e.PID); !ok || start != e.Start || !p.Alive() {
			p.Close()
			continue
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(e.Slot)}
		if err := unix.EpollCtl(a.epfd, unix.EPOLL_CTL_ADD, p.FD(), &ev); err != nil {
			p.Close()
			continue
		}
		a.seats[e.Slot] = &seatState{slot: e.Slot, class: withQuantum(e.Class, a.r2q), proc: p, words: make([]uint64, seatWords), adopted: true, start: e.Start, joined: now, seenAt: now, share: e.Class.Rate}
		a.dirty = true
		n++
	}
	return n, nil
}
