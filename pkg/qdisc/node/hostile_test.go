package node

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// hostileChildEnv, set, makes the test binary TestHostileMember's
// out-of-process attacker (TestMain): it takes its seat from descriptor
// 3, a socket, and scribbles on it until it is killed.
const hostileChildEnv = "NETQDISC_HOSTILE_CHILD"

// TestMain runs the package's tests with qdisctest.Main's reference leak
// check (a packet a test or a qdisc never released fails the run), or,
// with hostileChildEnv set, is TestHostileMember's attacker process.
func TestMain(m *testing.M) {
	if os.Getenv(hostileChildEnv) != "" {
		hostileChild()
		os.Exit(3) // hostileChild returns only when it could not attack
	}
	qdisctest.Main(m)
}

// hostileChild is a compromised Sentry in a process of its own: it maps
// the seat its runtime handed it (over descriptor 3) and scribbles on
// the page and its descriptor until it is killed. What the seals let
// through that they should not it prints to stderr as "BROKEN: ...",
// for its parent to read. It ends on its own only if its parent is gone,
// or after hostileChildLife, so that no test leaves it behind.
func hostileChild() {
	parent := os.Getppid()
	f, err := recvSeat(os.NewFile(3, "seat socket"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "attacker: %v\n", err)
		return
	}
	s, err := newScribbler(f, false, time.Now(), uint64(os.Getpid()), func(msg string) { fmt.Fprintf(os.Stderr, "BROKEN: %s\n", msg) })
	if err != nil {
		fmt.Fprintf(os.Stderr, "attacker: %v\n", err)
		return
	}
	for end := time.Now().Add(hostileChildLife); time.Now().Before(end) && os.Getppid() == parent; {
		s.burst()
		time.Sleep(hostilePause)
	}
	os.Exit(0)
}

// hostileChildLife bounds the attacker process's life.
const hostileChildLife = 5 * time.Minute

// hostilePause is how long an attacker sleeps between bursts: the test
// is of what its writes and calls reach, not of the CPU it burns, which
// is its cgroup's to hold (on this test's two cores, an attacker
// spinning flat out would starve the honest sandboxes' dispatchers).
const hostilePause = time.Millisecond

// sendSeat sends seat's descriptor over the socket sock (SCM_RIGHTS).
func sendSeat(sock, seat *os.File) error {
	return unix.Sendmsg(int(sock.Fd()), []byte{0}, unix.UnixRights(int(seat.Fd())), nil, 0)
}

// recvSeat receives a seat's descriptor from the socket sock, and
// closes sock.
func recvSeat(sock *os.File) (*os.File, error) {
	defer sock.Close()
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, 0)
	if err != nil {
		return nil, fmt.Errorf("receiving the seat: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("receiving the seat: %d control messages (%v)", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("receiving the seat: %d descriptors (%v)", len(fds), err)
	}
	return os.NewFile(uintptr(fds[0]), "seat"), nil
}

// The phases an attacker goes through, each for scribblePhase, over and
// over.
const (
	// phaseGreedy: its sequence moves at every burst, it wants 2^64-1,
	// its counters are 2^64-1 and the allocator's words forged.
	phaseGreedy = iota
	// phaseFrozen: the same, its sequence frozen (past Stale: parked,
	// and evictable), then jumping by 2^62 and more.
	phaseFrozen
	// phaseChaos: random values at random words, either mapping.
	phaseChaos
	// phaseDescriptor: what its descriptor reaches, one call a burst
	// (descriptorAttacks), its sequence moving.
	phaseDescriptor
	phases
)

// scribblePhase is how long each phase lasts: past Stale, so that a
// frozen sequence parks the class.
const scribblePhase = 700 * time.Millisecond

// scribbler is an attacker holding its seat: the descriptor its runtime
// handed it, the page mapped as a sandbox maps it (MapSeat), and a
// second mapping of its own. Not safe for concurrent use.
type scribbler struct {
	rng   *rand.Rand
	seat  *Seat
	extra []byte
	// leave says it may give its slot back (wLeft); one that must keep
	// it (to be killed holding it) never writes that word.
	leave bool
	// broken reports what the seals let through that they should not.
	broken func(string)

	start      time.Time
	phase      int
	seq        uint64
	bursts     int
	calls      int
	refusals   int
	lastRefuse string
}

// newScribbler maps the seat f and returns its attacker, its phases
// timed from start; it owns f.
func newScribbler(f *os.File, leave bool, start time.Time, seed uint64, broken func(string)) (*scribbler, error) {
	seat, err := MapSeat(f)
	if err != nil {
		return nil, err
	}
	extra, err := unix.Mmap(int(seat.f.Fd()), 0, seatBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		seat.Close()
		return nil, fmt.Errorf("a second mapping of a seat: %w", err)
	}
	return &scribbler{rng: rand.New(rand.NewPCG(seed, 47)), seat: seat, extra: extra, leave: leave, broken: broken, start: start}, nil
}

// close unmaps both mappings and closes the descriptor.
func (s *scribbler) close() {
	unix.Munmap(s.extra)
	s.seat.Close()
}

// words returns the page through one mapping or the other.
func (s *scribbler) words() []uint64 {
	if s.rng.IntN(2) == 0 {
		return s.seat.words
	}
	return wordsOf(s.extra)
}

// wordsOf is a mapped page as words.
func wordsOf(b []byte) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}

// index draws a word of the page, any but wLeft unless it may leave.
func (s *scribbler) index() int {
	if i := s.rng.IntN(seatWords); i != wLeft || s.leave {
		return i
	}
	return wDemand
}

// value draws a word an attacker writes: the edges, the clock's (a
// forged beat), a rate, or anything.
func (s *scribbler) value() uint64 {
	switch s.rng.IntN(9) {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return math.MaxUint64
	case 3:
		return 1 << 63
	case 4:
		return math.MaxInt64
	case 5:
		return uint64(Now())
	case 6:
		return uint64(Now()) + uint64(time.Hour)
	case 7:
		return uint64(s.rng.IntN(1000)) * mbit
	}
	return s.rng.Uint64()
}

// burst is one round of the attack: a few dozen writes to the page, or
// a call on the descriptor.
func (s *scribbler) burst() {
	s.bursts++
	phase := int(time.Since(s.start)/scribblePhase) % phases
	if phase != s.phase {
		if s.phase == phaseFrozen {
			s.seq += 1<<62 + s.rng.Uint64N(1<<62)
			atomic.StoreUint64(&s.words()[wSeq], s.seq)
		}
		s.phase = phase
	}
	w := s.words()
	switch phase {
	case phaseGreedy, phaseFrozen:
		if phase == phaseGreedy {
			s.seq++
			atomic.StoreUint64(&w[wSeq], s.seq)
		}
		atomic.StoreUint64(&w[wDemand], math.MaxUint64)
		for _, i := range []int{wBytes, wPackets, wLended, wBorrowed, wTokens} {
			atomic.StoreUint64(&w[i], math.MaxUint64-uint64(s.rng.IntN(2)))
		}
		atomic.StoreUint64(&w[aShare], math.MaxUint64)
		atomic.StoreUint64(&w[aBeat], s.value())
		atomic.StoreUint64(&w[aSlack], math.MaxUint64)
		atomic.StoreUint64(&w[aEvicted], s.value())
	case phaseChaos:
		for range 64 {
			atomic.StoreUint64(&s.words()[s.index()], s.value())
		}
		if s.leave && s.rng.IntN(16) == 0 {
			// Gives its class back and takes the word back at once:
			// the allocator frees the slot if it steps in between.
			atomic.StoreUint64(&w[wLeft], 1)
			atomic.StoreUint64(&w[wLeft], 0)
		}
	case phaseDescriptor:
		s.seq++
		atomic.StoreUint64(&w[wSeq], s.seq)
		atomic.StoreUint64(&w[wDemand], math.MaxUint64)
		s.descriptorAttack(s.calls % len(descriptorAttacks))
		s.calls++
	}
}

// descriptorAttack is what an attacker holding a seat's descriptor may
// call on it: refuse says the seals must refuse it; do makes the call.
type descriptorAttack struct {
	name   string
	refuse bool
	do     func(s *scribbler, fd int) error
}

// descriptorAttacks are the calls phaseDescriptor makes, in turn.
var descriptorAttacks = []descriptorAttack{
	{"ftruncate to 0", true, func(_ *scribbler, fd int) error { return unix.Ftruncate(fd, 0) }},
	{"ftruncate to 8", true, func(_ *scribbler, fd int) error { return unix.Ftruncate(fd, 8) }},
	{"ftruncate to 1 TB", true, func(_ *scribbler, fd int) error { return unix.Ftruncate(fd, 1<<40) }},
	{"fallocate growing", true, func(_ *scribbler, fd int) error { return unix.Fallocate(fd, 0, 0, 2*seatBytes) }},
	{"fallocate past the end, keeping the size", false, func(_ *scribbler, fd int) error {
		return unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, seatBytes, seatBytes)
	}},
	{"fallocate punching a hole", false, func(_ *scribbler, fd int) error {
		return unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, seatBytes)
	}},
	{"fallocate zeroing", false, func(_ *scribbler, fd int) error { return unix.Fallocate(fd, unix.FALLOC_FL_ZERO_RANGE, 0, seatBytes) }},
	{"fallocate collapsing", true, func(_ *scribbler, fd int) error {
		return unix.Fallocate(fd, unix.FALLOC_FL_COLLAPSE_RANGE, 0, seatBytes)
	}},
	{"F_ADD_SEALS F_SEAL_WRITE", true, func(_ *scribbler, fd int) error {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE)
		return err
	}},
	{"F_ADD_SEALS F_SEAL_FUTURE_WRITE", true, func(_ *scribbler, fd int) error {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_FUTURE_WRITE)
		return err
	}},
	{"pwrite of zeros over the page", false, func(_ *scribbler, fd int) error {
		_, err := unix.Pwrite(fd, make([]byte, seatBytes), 0)
		return err
	}},
	{"pwrite past the end", true, func(_ *scribbler, fd int) error {
		_, err := unix.Pwrite(fd, make([]byte, 8), seatBytes)
		return err
	}},
	{"write(2) of 0xff from offset 0", false, func(s *scribbler, fd int) error {
		if _, err := unix.Seek(fd, 0, 0); err != nil {
			return err
		}
		b := bytes.Repeat([]byte{0xff}, seatBytes)
		if !s.leave {
			clear(b[wLeft*8 : wLeft*8+8])
		}
		_, err := unix.Write(fd, b)
		return err
	}},
	{"a fresh mapping, scribbled on", false, func(s *scribbler, fd int) error {
		b, err := unix.Mmap(fd, 0, seatBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return err
		}
		for i, w := 0, wordsOf(b); i < 16; i++ {
			atomic.StoreUint64(&w[s.index()], s.value())
		}
		return unix.Munmap(b)
	}},
	{"a mapping of two pages (the second past the end, untouched)", false, func(_ *scribbler, fd int) error {
		b, err := unix.Mmap(fd, 0, 2*seatBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return err
		}
		return unix.Munmap(b)
	}},
	{"a private mapping, written", false, func(_ *scribbler, fd int) error {
		b, err := unix.Mmap(fd, 0, seatBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
		if err != nil {
			return err
		}
		clear(b)
		return unix.Munmap(b)
	}},
	{"madvise MADV_REMOVE", false, func(s *scribbler, _ int) error { return unix.Madvise(s.extra, unix.MADV_REMOVE) }},
	{"madvise MADV_DONTNEED", false, func(s *scribbler, _ int) error {
		return unix.Madvise(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s.seat.words))), seatBytes), unix.MADV_DONTNEED)
	}},
	{"dup and close", false, func(_ *scribbler, fd int) error {
		d, err := unix.Dup(fd)
		if err != nil {
			return err
		}
		return unix.Close(d)
	}},
}

// descriptorAttack makes attack i, then checks that the seat is still
// one: its size and its seals.
func (s *scribbler) descriptorAttack(i int) {
	a := descriptorAttacks[i]
	fd := int(s.seat.f.Fd())
	err := a.do(s, fd)
	switch {
	case a.refuse && err == nil:
		s.broken(fmt.Sprintf("%s on a seat: allowed", a.name))
	case err != nil:
		s.refusals++
		s.lastRefuse = fmt.Sprintf("%s: %v", a.name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size != seatBytes {
		s.broken(fmt.Sprintf("after %s, the seat has %d bytes (%v), want %d", a.name, st.Size, err, seatBytes))
	}
	if seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0); err != nil || seals&seatSeals != seatSeals || seals&(unix.F_SEAL_WRITE|unix.F_SEAL_FUTURE_WRITE) != 0 {
		s.broken(fmt.Sprintf("after %s, the seat's seals are %#x (%v), want %#x", a.name, seals, err, seatSeals))
	}
}

// hostileNode is TestHostileMember's node: its allocator served on a
// socket, and what the test's goroutines share.
type hostileNode struct {
	a      *Allocator
	client Client
	// quiet is held by whatever joins (the runtime's requests, the
	// in-process attacker's restarts), and taken whole while the
	// attacker process is killed: Held then only drops.
	quiet sync.RWMutex
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// end ends the window: every goroutine of the test's returns.
func (h *hostileNode) end() {
	h.once.Do(func() { close(h.stop) })
	h.wg.Wait()
}

// stopped reports whether the test has ended its window.
func (h *hostileNode) stopped() bool {
	select {
	case <-h.stop:
		return true
	default:
		return false
	}
}

// sleep sleeps for d or until the window ends; it reports whether the
// window goes on.
func (h *hostileNode) sleep(d time.Duration) bool {
	select {
	case <-h.stop:
		return false
	case <-time.After(d):
		return true
	}
}

// join joins class c for process pid through the runtime's socket, as
// runsc does: a pidfd of the process with the request.
func (h *hostileNode) join(c htb.ClassConfig, pid int) (htb.ClassConfig, *os.File, error) {
	pidfd, err := OpenPidFD(pid)
	if err != nil {
		return c, nil, err
	}
	defer pidfd.Close()
	_, c, f, err := h.client.Join(issueTree, c, pidfd)
	return c, f, err
}

// seated returns the seat of class id as the allocator holds it: its
// process's pid and its sequence as last seen; ok false if none.
func (h *hostileNode) seated(id uint32) (pid int, seq uint64, ok bool) {
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	for _, s := range h.a.seats {
		if s != nil && s.class.ID == id {
			return s.proc.PID(), s.seq, true
		}
	}
	return 0, 0, false
}

// steps returns how many times the allocator has stepped.
func (h *hostileNode) steps() uint64 {
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	return h.a.steps
}

// checkShares returns what is wrong with the shares the allocator last
// wrote: every class's (an attacker's too) within its rate and ceil, and
// the honest ones' within the root's rate.
func (h *hostileNode) checkShares(honest map[uint32]bool) []string {
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	var bad []string
	var sum uint64
	for _, s := range h.a.seats {
		if s == nil {
			continue
		}
		if s.share < s.class.Rate || s.share > s.class.Ceil {
			bad = append(bad, fmt.Sprintf("class %s's share %s is outside [%s, %s]", classify.ClassID(s.class.ID), fmtRate(s.share), fmtRate(s.class.Rate), fmtRate(s.class.Ceil)))
		}
		if honest[s.class.ID] {
			sum += s.share
		}
	}
	if sum > 100*mbit {
		bad = append(bad, fmt.Sprintf("the honest classes' shares sum to %s, past the root's 100Mbit", fmtRate(sum)))
	}
	return bad
}

// hostileHonest are TestHostileMember's honest sandboxes; hostileAttackers
// its attackers, the in-process one first.
var (
	hostileHonest    = []htb.ClassConfig{sandbox(10, 10, 100, 0), sandbox(20, 20, 40, 1), sandbox(30, 30, 100, 0)}
	hostileAttackers = []htb.ClassConfig{sandbox(40, 5, 100, 0), sandbox(50, 5, 100, 0)}
)

// hostileNIC is an honest sandbox of TestHostileMember: its qdisc (fifo)
// over its class's uplink over a link that counts what it takes, stepped
// by its runner on the real clock.
type hostileNIC struct {
	class  htb.ClassConfig
	link   *qdisctest.Link
	q      *fifo.Discipline
	runner *Runner
	seat   *Seat
}

// TestHostileMember is issue 47's node tested as an attacker: the
// issue's tree (a root of 100 Mbit/s), three honest sandboxes (1:a, 1:14,
// 1:1e: rates 10, 20, 30 Mbit/s, ceils 100, 40, 100, prios 0, 1, 0) and
// two compromised ones (1:28, 1:32: rates 5, ceils 100), joined through
// the runtime's socket with pidfds (the honest ones and the first
// attacker this process's, the second attacker its own process's), on
// an allocator stepped every Period on the real clock.
//
// Each honest sandbox keeps its fifo backlogged with 1500-byte packets.
// The first attacker, a goroutine, and the second, a process of its own
// (this binary re-executed, its seat handed over a socket given it as
// ExtraFiles: its pidfd must exist before its join), scribble on their
// seats for the whole window: a frozen sequence that then jumps, a
// demand and counters of 2^64-1, the allocator's words forged, random
// words at random offsets through two mappings, the page zeroed
// (pwrite, write(2), a hole punched, MADV_REMOVE), and every call the
// descriptor reaches that the seals must refuse (ftruncate, fallocate
// growing, F_ADD_SEALS, a write past the end). The first gives its slot
// back at times (wLeft), and its runtime restarts it; the second keeps
// its slot until it is killed with SIGKILL partway through, and its
// pidfd must free it within two steps (Held drops, Show no longer lists
// it). Every ~200 ms the runtime asks the allocator to join a class
// (which may be refused; joined, it gives it back at once), to show the
// node, to put the same tree in force and to evict a class (an honest
// one must be refused: it is live): each must be answered within
// hostileAnswer.
//
// Measured on the links in consecutive 1 s windows of the real clock
// after a 1 s warm-up (5 s of them; 30 with NETQDISC_LONG): each honest
// sandbox sends within [its rate, its ceil], with 2% of tolerance on
// either side for the windows' edges (bytes counted as a window closes
// may have been booked before it, a bucket holds a 64 KB burst) and the
// real clock's timer slack; the three send no more than the root's 100
// Mbit/s, with 1%. Every share the allocator writes is within its
// class's rate and ceil, the attackers' too. Nothing crashes the test
// process (no SIGBUS from a seat resized under its mapping), every
// packet is released (TestMain's leak check) and no goroutine is left.
func TestHostileMember(t *testing.T) {
	self, err := OpenPidFD(os.Getpid())
	if err != nil {
		t.Skipf("no pidfd_open here, which a node's allocator needs to watch its sandboxes: %v", err)
	}
	self.Close()
	before := runtime.NumGoroutine()
	t.Cleanup(func() { qdisctest.WaitGoroutines(t, before) })

	window := 5 * time.Second
	if qdisctest.Long() {
		window = 30 * time.Second
	}
	const warmUp = time.Second
	tree, err := htb.ParseScript(issueTree)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAllocator(tree, DefaultSlots)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	path := filepath.Join(t.TempDir(), "node.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- Serve(l, a, Now) }()
	t.Cleanup(func() {
		l.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	clock := tcpip.NewStdClock()
	stepper := StepEvery(a, clock, Now)
	t.Cleanup(stepper.Close)
	h := &hostileNode{a: a, client: Client{Path: path}, stop: make(chan struct{})}

	// The honest sandboxes.
	honest := map[uint32]bool{}
	var nics []*hostileNIC
	for _, c := range hostileHonest {
		honest[c.ID] = true
		c, f, err := h.join(c, os.Getpid())
		if err != nil {
			t.Fatalf("joining honest class %s: %v", classify.ClassID(c.ID), err)
		}
		seat, err := MapSeat(f)
		if err != nil {
			t.Fatal(err)
		}
		n := &hostileNIC{class: c, link: qdisctest.NewLink(nil), seat: seat}
		n.link.Discard = true
		up := NewUplink(n.link, c.Rate)
		n.q = fifo.NewWithClock(up, clock, 1, 1000)
		n.runner = Run(NewMember(seat, c), up, clock, Now)
		t.Cleanup(func() {
			n.runner.Close()
			n.q.Close()
			n.seat.Close()
		})
		nics = append(nics, n)
	}

	// The attacker process, joined with its own pidfd, its seat handed
	// to it once it runs.
	child, childPID, childErr := startHostileChild(t, h)

	end := time.Now().Add(warmUp + window + time.Second)
	t.Cleanup(h.end)
	for i, n := range nics {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.produce(n, uint64(i), end)
		}()
	}
	var broken brokenSeals
	attack := &inProcessAttack{class: hostileAttackers[0]}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.attackInProcess(attack, &broken)
	}()
	reqs := &runtimeRequests{}
	killed := make(chan struct{})
	h.wg.Add(2)
	go func() {
		defer h.wg.Done()
		h.request(reqs, honest, killed)
	}()
	kill := &killReport{}
	go func() {
		defer h.wg.Done()
		if h.sleep(warmUp + window*2/5) {
			h.kill(child, childPID, kill)
			close(killed)
		}
	}()

	// The windows.
	loadBefore, cpuBefore := loadAvg(), cpuTime()
	startedAt := time.Now()
	time.Sleep(warmUp)
	rates := make([][]float64, 0, int(window/time.Second))
	prev := make([]uint64, len(nics))
	for i, n := range nics {
		_, prev[i] = n.link.Count()
	}
	prevAt := time.Now()
	var bad []string
	for w := 0; w < int(window/time.Second); w++ {
		time.Sleep(time.Until(prevAt.Add(time.Second)))
		at := time.Now()
		row := make([]float64, len(nics)+1)
		for i, n := range nics {
			_, b := n.link.Count()
			row[i] = float64(b-prev[i]) * 8 / 1e6 / at.Sub(prevAt).Seconds()
			row[len(nics)] += row[i]
			prev[i] = b
			if err := n.runner.Err(); err != nil {
				bad = append(bad, fmt.Sprintf("window %d: class %s's runner: %v", w, classify.ClassID(n.class.ID), err))
			}
		}
		prevAt = at
		rates = append(rates, row)
		for _, s := range h.checkShares(honest) {
			bad = append(bad, fmt.Sprintf("window %d: %s", w, s))
		}
	}
	elapsed, cpu := time.Since(startedAt), cpuTime()-cpuBefore
	h.end()
	note := fmt.Sprintf("load average %s before, %s after; this process used %.2f CPUs over %v", loadBefore, loadAvg(), cpu.Seconds()/elapsed.Seconds(), elapsed.Round(time.Millisecond))

	// The rates, each window's and each class's least and most.
	var table strings.Builder
	fmt.Fprintf(&table, "%-8s", "window")
	for _, n := range nics {
		fmt.Fprintf(&table, " %9s", classify.ClassID(n.class.ID))
	}
	fmt.Fprintf(&table, " %9s (Mbit/s)\n", "honest")
	for w, row := range rates {
		fmt.Fprintf(&table, "%-8d", w)
		for _, r := range row {
			fmt.Fprintf(&table, " %9.3f", r)
		}
		table.WriteString("\n")
	}
	for _, what := range []string{"min", "max"} {
		fmt.Fprintf(&table, "%-8s", what)
		for i := range len(nics) + 1 {
			v := rates[0][i]
			for _, row := range rates {
				if what == "min" {
					v = min(v, row[i])
				} else {
					v = max(v, row[i])
				}
			}
			fmt.Fprintf(&table, " %9.3f", v)
		}
		table.WriteString("\n")
	}
	t.Logf("the honest sandboxes' rates in 1 s windows beside two attackers:\n%s%s", table.String(), note)
	for w, row := range rates {
		for i, n := range nics {
			lo, hi := float64(n.class.Rate)/mbit*0.98, float64(n.class.Ceil)/mbit*1.02
			if row[i] < lo || row[i] > hi {
				t.Errorf("window %d: class %s sent %.3f Mbit/s, outside [%.3f, %.3f] (its rate and ceil, 2%% either side); %s", w, classify.ClassID(n.class.ID), row[i], lo, hi, note)
			}
		}
		if total := row[len(nics)]; total > 100*1.01 {
			t.Errorf("window %d: the honest sandboxes sent %.3f Mbit/s in all, past the root's 100 by more than 1%%", w, total)
		}
	}
	for _, s := range bad {
		t.Error(s)
	}

	// The attackers and the runtime's requests.
	t.Logf("in-process attacker: %d bursts, %d descriptor calls (%d refused; the last: %s), %d restarts after its slot was freed (it gave it back, or was evicted parked)", attack.bursts, attack.calls, attack.refusals, attack.lastRefuse, attack.restarts)
	for _, s := range broken.list() {
		t.Errorf("in-process attacker: %s", s)
	}
	if attack.calls == 0 {
		t.Error("the in-process attacker made no call on its descriptor")
	}
	reqs.report(t)
	kill.report(t)
	child.cmd.Process.Kill() // if the test ended before killing it
	<-childErr
	if out := child.stderr.String(); strings.Contains(out, "BROKEN") || strings.Contains(out, "attacker:") {
		t.Errorf("the attacker process says:\n%s", out)
	}
}

// brokenSeals collects what the seals let through.
type brokenSeals struct {
	mu sync.Mutex
	// +checklocks:mu
	msg []string
}

func (b *brokenSeals) add(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.msg) < 20 {
		b.msg = append(b.msg, msg)
	}
}

func (b *brokenSeals) list() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.msg
}

// produce keeps n's fifo backlogged with 1500-byte packets until the
// window ends or end, at most the packets its ceil takes by then and as
// many again.
func (h *hostileNode) produce(n *hostileNIC, stream uint64, end time.Time) {
	const backlog = 400
	limit := uint64(2 * float64(n.class.Ceil) * time.Until(end).Seconds() / 1500)
	seq := stream << 56
	for sent := uint64(0); sent < limit && time.Now().Before(end); {
		for n.q.Stats().BacklogPackets < backlog && sent < limit {
			pkt := qdisctest.MakePacket(1500, 0, seq)
			n.q.WritePacket(pkt)
			pkt.DecRef()
			seq++
			sent++
		}
		if !h.sleep(2 * time.Millisecond) {
			return
		}
	}
}

// inProcessAttack is what the in-process attacker did.
type inProcessAttack struct {
	class                             htb.ClassConfig
	bursts, calls, refusals, restarts int
	lastRefuse                        string
}

// attackInProcess is the in-process attacker: it scribbles on its seat
// for the whole window; whenever the allocator freed its slot (it gave
// it back, or was evicted while parked), its runtime restarts it, a
// join of its class again through the socket.
func (h *hostileNode) attackInProcess(r *inProcessAttack, broken *brokenSeals) {
	var s *scribbler
	start := time.Now() // its phases go on across restarts
	defer func() {
		if s != nil {
			s.close()
		}
	}()
	restart := func() bool {
		h.quiet.RLock()
		defer h.quiet.RUnlock()
		c, f, err := h.join(r.class, os.Getpid())
		if err != nil {
			return false // not yet freed as a class, or a runtime's join took its room: again later
		}
		if s != nil {
			r.bursts, r.calls, r.refusals = r.bursts+s.bursts, r.calls+s.calls, r.refusals+s.refusals
			if s.lastRefuse != "" {
				r.lastRefuse = s.lastRefuse
			}
			s.close()
			r.restarts++
		}
		s, err = newScribbler(f, true, start, rand.Uint64(), broken.add)
		if err != nil {
			broken.add(fmt.Sprintf("mapping its seat, as class %s: %v", classify.ClassID(c.ID), err))
			s = nil
			return false
		}
		return true
	}
	for !restart() {
		if !h.sleep(10 * time.Millisecond) {
			return
		}
	}
	for i := 1; !h.stopped(); i++ {
		s.burst()
		if i%16 == 0 {
			if _, _, ok := h.seated(r.class.ID); !ok {
				restart()
			}
		}
		time.Sleep(hostilePause)
	}
	r.bursts, r.calls, r.refusals = r.bursts+s.bursts, r.calls+s.calls, r.refusals+s.refusals
	if s.lastRefuse != "" {
		r.lastRefuse = s.lastRefuse
	}
}

// hostileChildProcess is the attacker process.
type hostileChildProcess struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
}

// startHostileChild starts the attacker process, joins its class with
// its pidfd and hands it its seat. The returned channel yields once it
// has been reaped.
func startHostileChild(t *testing.T, h *hostileNode) (*hostileChildProcess, int, <-chan struct{}) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "seat socket"), os.NewFile(uintptr(fds[1]), "seat socket")
	defer ours.Close()
	c := &hostileChildProcess{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	c.cmd.Env = append(os.Environ(), hostileChildEnv+"=1")
	c.cmd.ExtraFiles = []*os.File{theirs}
	c.cmd.Stderr = &c.stderr
	err = c.cmd.Start()
	theirs.Close()
	if err != nil {
		t.Fatalf("starting the attacker process: %v", err)
	}
	reaped := make(chan struct{})
	go func() {
		c.cmd.Wait()
		close(reaped)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-reaped
	})
	pid := c.cmd.Process.Pid
	class, f, err := h.join(hostileAttackers[1], pid)
	if err != nil {
		t.Fatalf("joining the attacker process's class %s: %v", classify.ClassID(hostileAttackers[1].ID), err)
	}
	defer f.Close()
	if err := sendSeat(ours, f); err != nil {
		t.Fatalf("handing the attacker process its seat: %v", err)
	}
	if got, _, ok := h.seated(class.ID); !ok || got != pid {
		t.Fatalf("the attacker process's class %s: seated %v, pid %d; want its pid %d", classify.ClassID(class.ID), ok, got, pid)
	}
	return c, pid, reaped
}

// killReport is what killing the attacker process showed.
type killReport struct {
	done                bool
	errs                []string
	steps               uint64
	exited, freed       time.Duration
	heldBefore, heldNow int
}

// kill kills the attacker process with SIGKILL and waits for its slot
// to be freed, with no join meanwhile (quiet).
func (h *hostileNode) kill(c *hostileChildProcess, pid int, r *killReport) {
	h.quiet.Lock()
	defer h.quiet.Unlock()
	r.done = true
	id := hostileAttackers[1].ID
	// Its sequence as the allocator last saw it is 0 only while the
	// attacker has zeroed its page: within a phase, it moves.
	for deadline := time.Now().Add(hostileAnswer); ; time.Sleep(time.Millisecond) {
		got, seq, ok := h.seated(id)
		if !ok || got != pid {
			r.errs = append(r.errs, fmt.Sprintf("before it was killed, the attacker process's class %s was not seated (seated %v, pid %d; its pid %d): it lost its slot without being killed", classify.ClassID(id), ok, got, pid))
			return
		}
		if seq != 0 {
			break
		}
		if time.Now().After(deadline) {
			r.errs = append(r.errs, "before it was killed, the attacker process had not moved its sequence: it never attacked")
			break
		}
	}
	watch, err := OpenPidFD(pid)
	if err != nil {
		r.errs = append(r.errs, err.Error())
		return
	}
	defer watch.Close()
	r.heldBefore = h.a.Held()
	killedAt := time.Now()
	if err := c.cmd.Process.Signal(unix.SIGKILL); err != nil {
		r.errs = append(r.errs, fmt.Sprintf("SIGKILL: %v", err))
		return
	}
	fds := []unix.PollFd{{Fd: int32(watch.Fd()), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(hostileAnswer/time.Millisecond))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			r.errs = append(r.errs, fmt.Sprintf("the attacker process had not exited %v after SIGKILL (%v)", hostileAnswer, err))
			return
		}
		break
	}
	r.exited = time.Since(killedAt)
	steps, exitedAt := h.steps(), time.Now()
	for {
		if got, _, ok := h.seated(id); !ok || got != pid {
			break
		}
		if time.Since(exitedAt) > hostileAnswer {
			r.errs = append(r.errs, fmt.Sprintf("the attacker process's slot still held %v after it exited", hostileAnswer))
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
	r.freed, r.steps = time.Since(exitedAt), h.steps()-steps
	r.heldNow = h.a.Held()
	if r.steps > 2 {
		r.errs = append(r.errs, fmt.Sprintf("the attacker process's slot was freed %d steps after it exited (%v), want within 2", r.steps, r.freed))
	}
	if r.heldNow >= r.heldBefore {
		r.errs = append(r.errs, fmt.Sprintf("the allocator holds %d sandboxes after the attacker process was killed, %d before", r.heldNow, r.heldBefore))
	}
	if show := h.a.Show(Now()); strings.Contains(show, fmt.Sprintf("pid %d ", pid)) || strings.Contains(show, "class htb "+classify.ClassID(id)+" ") {
		r.errs = append(r.errs, fmt.Sprintf("the node still shows the attacker process, killed:\n%s", show))
	}
}

// report logs what killing the attacker process showed, and fails t
// with what went wrong.
func (r *killReport) report(t *testing.T) {
	t.Helper()
	if !r.done {
		t.Error("the attacker process was never killed")
		return
	}
	for _, e := range r.errs {
		t.Error(e)
	}
	if len(r.errs) == 0 {
		t.Logf("attacker process killed: exited %v after SIGKILL, its slot freed %v later (%d steps); %d sandboxes held, then %d", r.exited.Round(time.Microsecond), r.freed.Round(time.Microsecond), r.steps, r.heldBefore, r.heldNow)
	}
}

// hostileAnswer is how long the allocator may take to answer a request
// of the runtime's, or to free a killed sandbox's slot, before the test
// counts it hung (its socket's own deadline is ioTimeout).
const hostileAnswer = 3 * time.Second

// runtimeRequests counts the runtime's requests by what they asked and
// how the allocator answered.
type runtimeRequests struct {
	mu sync.Mutex
	// +checklocks:mu
	answers map[string]int
	// +checklocks:mu
	slowest time.Duration
	// +checklocks:mu
	errs []string
}

func (r *runtimeRequests) add(op string, took time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.answers == nil {
		r.answers = map[string]int{}
	}
	how := "answered"
	if err != nil {
		how = "refused"
	}
	r.answers[op+" "+how]++
	r.slowest = max(r.slowest, took)
	if took > hostileAnswer {
		r.errs = append(r.errs, fmt.Sprintf("%s took %v to answer (%v)", op, took, err))
	}
}

func (r *runtimeRequests) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, msg)
}

func (r *runtimeRequests) report(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Logf("the runtime's requests: %v; the slowest answered in %v", r.answers, r.slowest)
	for _, e := range r.errs {
		t.Error(e)
	}
	if r.answers["show answered"] == 0 {
		t.Error("no show of the runtime's was answered")
	}
}

// request is the runtime beside the attack: every ~200 ms it joins a
// class (which may not fit, or be taken; joined, its sandbox gives it
// back at once), shows the node, puts the same tree in force and evicts
// a class (an honest one must be refused, being live; the attacker
// process's, once killed, is no one's). (checklocks does not follow
// h.quiet's read lock into the closures it calls.)
// +checklocksignore
func (h *hostileNode) request(r *runtimeRequests, honest map[uint32]bool, killed <-chan struct{}) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 47))
	timed := func(op string, f func() error) error {
		start := time.Now()
		err := f()
		r.add(op, time.Since(start), err)
		return err
	}
	for h.sleep(200 * time.Millisecond) {
		h.quiet.RLock()
		c := htb.ClassConfig{ID: 1 << 16, Parent: 1<<16 | 1, Rate: []uint64{1, 29, 31, 100}[rng.IntN(4)] * mbit, Ceil: 100 * mbit}
		if rng.IntN(4) == 0 {
			c.ID = hostileHonest[rng.IntN(len(hostileHonest))].ID // taken: refused
		}
		var f *os.File
		timed("join", func() (err error) {
			_, f, err = h.join(c, os.Getpid())
			return err
		})
		if f != nil {
			if seat, err := MapSeat(f); err != nil {
				r.fail(fmt.Sprintf("a seat the allocator gave: %v", err))
			} else {
				seat.leave()
				seat.Close()
			}
		}
		h.quiet.RUnlock()
		timed("show", func() error {
			show, _, err := h.client.Show("")
			if err == nil && !strings.Contains(show, " sandbox: slot ") {
				r.fail(fmt.Sprintf("the node shows no sandbox:\n%s", show))
			}
			return err
		})
		timed("tree", func() error {
			_, err := h.client.SetTree(issueTree)
			if err != nil {
				r.fail(fmt.Sprintf("putting the same tree in force: %v", err))
			}
			return err
		})
		targets := []uint32{rng.Uint32(), hostileAttackers[0].ID, hostileHonest[rng.IntN(len(hostileHonest))].ID}
		select {
		case <-killed:
			targets = append(targets, hostileAttackers[1].ID)
		default:
		}
		id := targets[rng.IntN(len(targets))]
		err := timed("evict", func() error { return h.client.Evict(id) })
		if honest[id] && (err == nil || !strings.Contains(err.Error(), "is live")) {
			r.fail(fmt.Sprintf("evicting honest class %s, live and backlogged: %v, want it refused as live", classify.ClassID(id), err))
		}
	}
}

// loadAvg returns the machine's load averages (/proc/loadavg's first
// three), for a rate below the floor to say whether the CPU was short.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// cpuTime returns the CPU time this process has used.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
