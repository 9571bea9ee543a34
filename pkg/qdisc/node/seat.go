package node

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A seat is the one page a sandbox shares with its node's Allocator: a
// memfd the Allocator makes, sealed against shrinking, growing and
// further seals before any sandbox holds it, and maps; the runtime hands
// the sandbox a descriptor of it. The sandbox writes its words (what its
// class wants and sent); the Allocator writes its own (the share) in the
// same page. Whatever the sandbox writes there, and whatever it does with
// its descriptor (resize: refused by the seals; punch a hole: the page
// reads as zeros), reaches only its own class: no other sandbox maps it,
// and the Allocator reads it as untrusted words, clamped to what the
// runtime gave the class (Allocator.Step). The class itself, the tree and
// the admission are the Allocator's, in its own memory.
//
// Every word is read and written atomically.
const seatBytes = 4096

// The sandbox's words (the Member writes them).
const (
	// wSeq moves on at every publish: the Allocator counts a class live
	// while it does (no sandbox's clock is trusted).
	wSeq      = iota
	wDemand   // bytes a second the class wants
	wBytes    // bytes sent
	wPackets  // packets sent
	wLended   // packets sent within its rate
	wBorrowed // packets sent past its rate
	wTokens   // its bucket's tokens, bytes
	wLeft     // not 0: the sandbox gave its class back (it stops)
)

// The Allocator's words, on a cache line of their own.
const (
	aShare   = 8 + iota // bytes a second the class may send
	aBeat               // when the Allocator last wrote the share (ns, CLOCK_MONOTONIC)
	aSlack              // the most a class not waiting may want past what it sends
	aEvicted            // not 0: the operator evicted the class (runsc qdisc node ... evict)
)

// seatWords is a seat in words.
const seatWords = seatBytes / 8

// seatSeals are the seals a seat carries before a sandbox holds it: its
// size is fixed, and no seal can be added (F_SEAL_WRITE would stop the
// Allocator's writes).
const seatSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// newSeatFile makes a seat's memfd, sized and sealed.
func newSeatFile(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate("netqdisc-seat:"+name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("node: making a seat (memfd_create): %w", err)
	}
	f := os.NewFile(uintptr(fd), "netqdisc-seat:"+name)
	if err := unix.Ftruncate(fd, seatBytes); err != nil {
		f.Close()
		return nil, fmt.Errorf("node: sizing a seat: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seatSeals); err != nil {
		f.Close()
		return nil, fmt.Errorf("node: sealing a seat: %w", err)
	}
	return f, nil
}

// mapSeat maps f, a seat's memfd, shared, after checking that it is one:
// a memfd of seatBytes sealed against resizing. Either side maps it this
// way: the sandbox so that a descriptor it was handed cannot fault it,
// the Allocator on its own.
func mapSeat(f *os.File) ([]uint64, error) {
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		return nil, fmt.Errorf("node: %s is not a seat (no seals: %v): give the descriptor the node's allocator made", f.Name(), err)
	}
	if seals&(unix.F_SEAL_SHRINK|unix.F_SEAL_GROW) != unix.F_SEAL_SHRINK|unix.F_SEAL_GROW {
		return nil, fmt.Errorf("node: %s is not sealed against resizing (seals %#x): give the descriptor the node's allocator made", f.Name(), seals)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("node: %s: %w", f.Name(), err)
	}
	if st.Size != seatBytes {
		return nil, fmt.Errorf("node: %s has %d bytes, a seat %d", f.Name(), st.Size, seatBytes)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, seatBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("node: mapping %s: %w", f.Name(), err)
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(mem))), seatWords), nil
}

// unmapSeat unmaps a seat mapSeat mapped.
func unmapSeat(w []uint64) error {
	if w == nil {
		return nil
	}
	return unix.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), seatBytes))
}

// Seat is a sandbox's side of its seat: the page mapped from the
// descriptor the runtime handed it (MapSeat).
type Seat struct {
	f     *os.File
	words []uint64
}

// MapSeat maps the seat whose descriptor f the runtime handed the
// sandbox; the Seat owns f from then on (Close closes it).
func MapSeat(f *os.File) (*Seat, error) {
	w, err := mapSeat(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Seat{f: f, words: w}, nil
}

// Published is what a sandbox writes of its class each Period.
type Published struct {
	Demand                                   uint64
	Bytes, Packets, Lended, Borrowed, Tokens uint64
}

// publish writes p and moves the sequence on.
func (s *Seat) publish(p Published) {
	w := s.words
	atomic.StoreUint64(&w[wDemand], p.Demand)
	atomic.StoreUint64(&w[wBytes], p.Bytes)
	atomic.StoreUint64(&w[wPackets], p.Packets)
	atomic.StoreUint64(&w[wLended], p.Lended)
	atomic.StoreUint64(&w[wBorrowed], p.Borrowed)
	atomic.StoreUint64(&w[wTokens], p.Tokens)
	atomic.AddUint64(&w[wSeq], 1)
}

// allocated returns what the Allocator last wrote: the share, when, the
// slack, and whether the class was evicted.
func (s *Seat) allocated() (share uint64, beat int64, slack uint64, evicted bool) {
	w := s.words
	return atomic.LoadUint64(&w[aShare]), int64(atomic.LoadUint64(&w[aBeat])), atomic.LoadUint64(&w[aSlack]), atomic.LoadUint64(&w[aEvicted]) != 0
}

// leave tells the Allocator the sandbox gives its class back.
func (s *Seat) leave() { atomic.StoreUint64(&s.words[wLeft], 1) }

// Close unmaps the seat and closes its descriptor; safe to call twice.
func (s *Seat) Close() error {
	err := unmapSeat(s.words)
	s.words = nil
	if s.f != nil {
		if cerr := s.f.Close(); err == nil {
			err = cerr
		}
		s.f = nil
	}
	return err
}
