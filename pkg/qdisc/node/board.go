package node

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// A Board is a node's shared state, in memory every sandbox of the node
// maps (a file the runtime opens and hands each sandbox before its
// seccomp filter): a header, the operator's tree as tc's words, and a
// slot per sandbox. The runtime writes the tree and claims a slot for
// each sandbox it starts (Join) with the sandbox's class; the sandbox
// then writes only its own slot's live words (Publish), and reads every
// slot to compute its share (Snapshot, Allocate). Every word is read and
// written atomically, so readers in other processes see whole words.
//
// Layout, in 8-byte words (little-endian as the host is):
//
//	header  [0, 8):   magic, version, slots, tree generation, tree bytes, 3 reserved
//	tree    [8, 8+treeWords): the tree's words, 8 bytes a word, NUL padded
//	slots   then slots × slotWords words (slot.go)
type Board struct {
	words []uint64
	slots int
}

const (
	magic   = 0x3145444f4e51_4e // "NQNODE1" read little-endian
	version = 1

	headerWords = 8
	// treeWords bounds the tree: 16 KiB of tc's words.
	treeWords = 2048

	// MaxSlots bounds the sandboxes of a board.
	MaxSlots = 4096
)

// header word indexes.
const (
	hMagic = iota
	hVersion
	hSlots
	hTreeGen
	hTreeLen
)

// Size returns the bytes a board of slots slots takes: the size of the
// file the runtime makes.
func Size(slots int) int {
	return 8 * (headerWords + treeWords + slots*slotWords)
}

// Format lays a new board of slots slots out in mem (Size(slots) bytes,
// 8-byte aligned, zeroed: a new file's), with no tree and no sandbox.
func Format(mem []byte, slots int) (*Board, error) {
	if slots < 1 || slots > MaxSlots {
		return nil, fmt.Errorf("node: a board of %d slots: give 1 to %d", slots, MaxSlots)
	}
	w, err := wordsOf(mem, Size(slots))
	if err != nil {
		return nil, err
	}
	b := &Board{words: w, slots: slots}
	atomic.StoreUint64(&w[hVersion], version)
	atomic.StoreUint64(&w[hSlots], uint64(slots))
	atomic.StoreUint64(&w[hMagic], magic)
	return b, nil
}

// Open returns the board mem holds, which Format laid out (in this
// process or another).
func Open(mem []byte) (*Board, error) {
	w, err := wordsOf(mem, 8*headerWords)
	if err != nil {
		return nil, err
	}
	if m := atomic.LoadUint64(&w[hMagic]); m != magic {
		return nil, fmt.Errorf("node: not a node board (magic %#x): give the file the runtime formats", m)
	}
	if v := atomic.LoadUint64(&w[hVersion]); v != version {
		return nil, fmt.Errorf("node: board version %d, this build reads %d", v, version)
	}
	slots := atomic.LoadUint64(&w[hSlots])
	if slots < 1 || slots > MaxSlots {
		return nil, fmt.Errorf("node: a board of %d slots is corrupt", slots)
	}
	if w, err = wordsOf(mem, Size(int(slots))); err != nil {
		return nil, err
	}
	return &Board{words: w, slots: int(slots)}, nil
}

// wordsOf views the first size bytes of mem as words.
func wordsOf(mem []byte, size int) ([]uint64, error) {
	if len(mem) < size {
		return nil, fmt.Errorf("node: the board's memory has %d bytes, it needs %d", len(mem), size)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%8 != 0 {
		return nil, fmt.Errorf("node: the board's memory is not 8-byte aligned")
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(mem))), size/8), nil
}

// Slots returns how many sandboxes the board holds.
func (b *Board) Slots() int { return b.slots }

// SetTree writes the operator's tree, its classes as tc's words
// (htb.Script: the root at the uplink's rate, inner classes for
// tenants), for every sandbox to read (Tree). Only the runtime writes
// it, one writer at a time (it holds the board file's lock); readers
// retry while it writes.
func (b *Board) SetTree(s htb.Script) error {
	text := s.String()
	if len(text) > 8*treeWords {
		return fmt.Errorf("node: the tree's words take %d bytes, past the board's %d", len(text), 8*treeWords)
	}
	w := b.words
	gen := atomic.LoadUint64(&w[hTreeGen])
	atomic.StoreUint64(&w[hTreeGen], gen|1) // odd: being written
	padded := make([]byte, 8*treeWords)
	copy(padded, text)
	for i := range treeWords {
		atomic.StoreUint64(&w[headerWords+i], leWord(padded[8*i:]))
	}
	atomic.StoreUint64(&w[hTreeLen], uint64(len(text)))
	atomic.StoreUint64(&w[hTreeGen], (gen|1)+1)
	return nil
}

// TreeGen returns the tree's generation: a Member reads the tree again
// only when it moved on.
func (b *Board) TreeGen() uint64 { return atomic.LoadUint64(&b.words[hTreeGen]) }

// Tree returns the operator's tree and its generation (which SetTree
// moves on), or an error if there is none or it does not parse.
func (b *Board) Tree() (htb.Script, uint64, error) {
	w := b.words
	for range 1000 {
		gen := atomic.LoadUint64(&w[hTreeGen])
		if gen&1 != 0 {
			continue
		}
		n := atomic.LoadUint64(&w[hTreeLen])
		if n > 8*treeWords {
			return htb.Script{}, 0, fmt.Errorf("node: the board's tree is corrupt (%d bytes)", n)
		}
		buf := make([]byte, 0, 8*treeWords)
		for i := range treeWords {
			buf = appendLE(buf, atomic.LoadUint64(&w[headerWords+i]))
		}
		if atomic.LoadUint64(&w[hTreeGen]) != gen {
			continue
		}
		if gen == 0 {
			return htb.Script{}, 0, fmt.Errorf("node: the board has no tree yet")
		}
		s, err := htb.ParseScript(string(buf[:n]))
		if err != nil {
			return htb.Script{}, 0, fmt.Errorf("node: the board's tree: %w", err)
		}
		return s, gen, nil
	}
	return htb.Script{}, 0, fmt.Errorf("node: the board's tree is being written")
}

// leWord reads 8 bytes as a little-endian word.
func leWord(p []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(p[i])
	}
	return v
}

// appendLE appends v as 8 little-endian bytes.
func appendLE(b []byte, v uint64) []byte {
	for range 8 {
		b = append(b, byte(v))
		v >>= 8
	}
	return b
}
