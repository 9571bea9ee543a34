package fifo_test

import (
	"runtime"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	upstreamfifo "gvisor.dev/gvisor/pkg/tcpip/link/qdisc/fifo"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

func TestMain(m *testing.M) { qdisctest.Main(m) }

// TestOrderBatchesAndHashing writes interleaved flows and checks that each
// flow's packets leave in order, on the queue its hash selects, in batches
// of at most 47, with nothing lost or changed.
func TestOrderBatchesAndHashing(t *testing.T) {
	for _, tc := range []struct {
		name           string
		queues, flows  int
		packetsPerFlow int
	}{
		{"one queue", 1, 4, 500},
		{"four queues", 4, 16, 300},
		{"more queues than flows", 8, 3, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := qdisctest.NewLink(nil)
			var writes, maxBatch, perWrite int
			lastWrite := -1
			d := fifo.New(link, tc.queues, 10000)
			for i := 0; i < tc.packetsPerFlow; i++ {
				for f := 0; f < tc.flows; f++ {
					pkt := qdisctest.MakePacket(100+f, uint32(f), uint64(f)<<32|uint64(i))
					if err := d.WritePacket(pkt); err != nil {
						t.Fatalf("WritePacket: %v", err)
					}
					pkt.DecRef()
				}
			}
			qdisctest.WaitQuiescent(t, d)
			d.Close()
			recs := link.Records()
			if len(recs) != tc.flows*tc.packetsPerFlow {
				t.Fatalf("%d packets reached the link, want %d", len(recs), tc.flows*tc.packetsPerFlow)
			}
			next := make(map[uint32]uint64)
			for _, r := range recs {
				flow := uint32(r.Seq >> 32)
				if r.Hash != flow {
					t.Fatalf("packet %#x carries hash %d, want %d", r.Seq, r.Hash, flow)
				}
				if got := r.Seq & 0xffffffff; got != next[flow] {
					t.Fatalf("flow %d: packet %d left where %d was next", flow, got, next[flow])
				}
				next[flow]++
				if r.Write != lastWrite {
					writes++
					lastWrite, perWrite = r.Write, 0
				}
				perWrite++
				maxBatch = max(maxBatch, perWrite)
			}
			if maxBatch > fifo.BatchSize {
				t.Errorf("a batch of %d packets; at most %d", maxBatch, fifo.BatchSize)
			}
			if err := link.Err(); err != nil {
				t.Error(err)
			}
			st := d.Stats()
			if st.Packets != uint64(len(recs)) || st.Drops != 0 {
				t.Errorf("Stats %+v; want %d sent, none dropped", st, len(recs))
			}
			t.Logf("%d packets in %d writes, largest batch %d", len(recs), writes, maxBatch)
		})
	}
}

// TestFullQueueDrops holds the lower link so that the queue fills.
func TestFullQueueDrops(t *testing.T) {
	link := qdisctest.NewLink(nil)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	link.OnWrite = func() {
		select {
		case entered <- struct{}{}:
			<-release // hold only the first write
		default:
		}
	}
	d := fifo.New(link, 1, 4)
	write := func(seq uint64) tcpip.Error {
		pkt := qdisctest.MakePacket(1000, 0, seq)
		defer pkt.DecRef()
		return d.WritePacket(pkt)
	}
	if err := write(0); err != nil {
		t.Fatal(err)
	}
	<-entered // the dispatcher holds packet 0 in the lower link
	for i := uint64(1); i <= 4; i++ {
		if err := write(i); err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
	}
	for i := uint64(5); i <= 6; i++ {
		if _, ok := write(i).(*tcpip.ErrNoBufferSpace); !ok {
			t.Fatalf("packet %d on a full queue did not answer ErrNoBufferSpace", i)
		}
	}
	if st := d.Stats(); st.Drops != 2 || st.BacklogPackets != 4 || st.BacklogBytes != 4000 {
		t.Errorf("while held: %+v; want 2 drops, 4 packets (4000 bytes) queued", st)
	}
	close(release)
	qdisctest.WaitQuiescent(t, d)
	d.Close()
	want := "Sent 5000 bytes 5 pkt (dropped 2, overlimits 0 requeues 0)\n backlog 0b 0p requeues 0"
	if got := d.Stats().String(); got != want {
		t.Errorf("Stats:\n%s\nwant\n%s", got, want)
	}
}

// TestLowerLinkRefusal: what the lower link refuses for want of room is
// requeued at the head and sent, in order, by the next write, and counted
// as requeues; what it refuses for another reason is dropped.
func TestLowerLinkRefusal(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		refusal                    tcpip.Error
		wantSent, wantDropped, req uint64
	}{
		// Batch 1: packet 0. Batch 2: packets 1..10, of which the link takes
		// one a call: 9+8+...+1 requeued.
		{"no room", &tcpip.ErrWouldBlock{}, 11, 0, 45},
		{"no buffer space", &tcpip.ErrNoBufferSpace{}, 11, 0, 45},
		{"closed", &tcpip.ErrClosedForSend{}, 2, 9, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := qdisctest.NewLink(nil)
			link.AcceptAtMost = 1
			link.Refusal = tc.refusal
			entered := make(chan struct{}, 1)
			release := make(chan struct{})
			link.OnWrite = func() {
				select {
				case entered <- struct{}{}:
					<-release
				default:
				}
			}
			d := fifo.New(link, 1, 100)
			defer d.Close()
			for i := 0; i < 11; i++ {
				pkt := qdisctest.MakePacket(100, 0, uint64(i))
				if err := d.WritePacket(pkt); err != nil {
					t.Fatal(err)
				}
				pkt.DecRef()
				if i == 0 {
					<-entered
				}
			}
			close(release)
			qdisctest.WaitQuiescent(t, d)
			if st := d.Stats(); st.Packets != tc.wantSent || st.Drops != tc.wantDropped || st.Requeues != tc.req || st.BacklogPackets != 0 {
				t.Errorf("Stats %+v; want %d sent, %d dropped, %d requeues", st, tc.wantSent, tc.wantDropped, tc.req)
			}
			for i, r := range link.Records() {
				if r.Seq != uint64(i) {
					t.Fatalf("departure %d is packet %d", i, r.Seq)
				}
			}
		})
	}
}

func TestCloseRace(t *testing.T) {
	for _, queues := range []int{1, 3} {
		for round := 0; round < 5; round++ {
			qdisctest.CloseRace(t, func() qdisctest.StatsQdisc {
				link := qdisctest.NewLink(nil)
				link.Discard = true
				link.OnWrite = runtime.Gosched // a slow link: backlog at Close
				return fifo.New(link, queues, 64)
			}, 8, 400)
		}
	}
}

func TestNoAllocationPerPacket(t *testing.T) {
	link := qdisctest.NewLink(nil)
	link.Discard = true
	d := fifo.New(link, 2, 1000)
	defer d.Close()
	if a := qdisctest.AllocsPerPacket(t, d, d); a != 0 {
		t.Errorf("%.3f allocations per packet, want 0", a)
	}
}

// BenchmarkWritePacket is fifo's per-packet cost, from WritePacket to the
// lower link, with the producers given by -cpu; BenchmarkUpstreamWritePacket
// is gVisor's own fifo, for a ratio from one run.
func BenchmarkWritePacket(b *testing.B) {
	benchQueues(b, func(lower stack.LinkWriter, queues int) stack.QueueingDiscipline {
		return fifo.New(lower, queues, 1000)
	})
}

func BenchmarkUpstreamWritePacket(b *testing.B) {
	benchQueues(b, func(lower stack.LinkWriter, queues int) stack.QueueingDiscipline {
		return upstreamfifo.New(lower, queues, 1000)
	})
}

func benchQueues(b *testing.B, mk func(stack.LinkWriter, int) stack.QueueingDiscipline) {
	for _, queues := range []int{1, 2} {
		b.Run(map[int]string{1: "1queue", 2: "2queues"}[queues], func(b *testing.B) {
			link := qdisctest.NewLink(nil)
			link.Discard = true
			q := mk(link, queues)
			defer q.Close()
			qdisctest.BenchWritePacket(b, q)
		})
	}
}
