package node

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// File is a board in a file, mapped shared: what the runtime opens on
// the host (OpenFile) and what a sandbox maps from the descriptor the
// runtime hands it (MapFile).
type File struct {
	*Board
	f   *os.File
	mem []byte
}

// OpenFile opens the board at path, making it with slots slots if the
// file is new or empty, and maps it. The runtime holds the file's lock
// (Lock) while it joins a sandbox or writes the tree.
func OpenFile(path string, slots int) (*File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("node: the board file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("node: locking %s: %w", path, err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	fresh := st.Size() == 0
	if fresh {
		if err := f.Truncate(int64(Size(slots))); err != nil {
			f.Close()
			return nil, fmt.Errorf("node: sizing %s: %w", path, err)
		}
	}
	bf, err := mapFile(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	if fresh {
		if bf.Board, err = Format(bf.mem, slots); err != nil {
			bf.Close()
			return nil, err
		}
	}
	return bf, nil
}

// MapFile maps the board in f, a descriptor of a board file the runtime
// made; the File owns f from then on.
func MapFile(f *os.File) (*File, error) {
	bf, err := mapFile(f)
	if err != nil {
		f.Close()
	}
	return bf, err
}

// mapFile maps f shared and opens the board in it, if formatted.
func mapFile(f *os.File) (*File, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < int64(Size(1)) || st.Size() > int64(Size(MaxSlots)) {
		return nil, fmt.Errorf("node: %s has %d bytes: not a board", f.Name(), st.Size())
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("node: mapping %s: %w", f.Name(), err)
	}
	bf := &File{f: f, mem: mem}
	if b, err := Open(mem); err == nil {
		bf.Board = b
	} else if !isZero(mem[:8]) {
		bf.Close()
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return bf, nil
}

// isZero reports whether b is all zero bytes.
func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Lock takes the board file's lock, which the runtime holds while it
// joins a sandbox or writes the tree.
func (bf *File) Lock() error { return unix.Flock(int(bf.f.Fd()), unix.LOCK_EX) }

// Unlock releases the lock Lock took.
func (bf *File) Unlock() error { return unix.Flock(int(bf.f.Fd()), unix.LOCK_UN) }

// Fd returns the file's descriptor, for the runtime to hand a sandbox.
func (bf *File) Fd() uintptr { return bf.f.Fd() }

// Close unmaps the board and closes the file.
func (bf *File) Close() error {
	var err error
	if bf.mem != nil {
		err = unix.Munmap(bf.mem)
		bf.mem = nil
	}
	if cerr := bf.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Now is the board's time: CLOCK_MONOTONIC in ns, which every process of
// the node reads alike.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err)) // cannot fail on Linux
	}
	return ts.Nano()
}
