package benchmarks

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// The bulk streams: their receivers on B, which check every byte, and
// their senders on A.

// startServers listens on B: bulk receivers that check every byte, and an
// echo server for the probe.
func (h *harness) startServers() error {
	bulkL, err := gonet.ListenTCP(h.sb, tcpip.FullAddress{NIC: nicID, Addr: addrB, Port: bulkPort}, ipv4.ProtocolNumber)
	if err != nil {
		return err
	}
	h.track(bulkL)
	probeL, err := gonet.ListenTCP(h.sb, tcpip.FullAddress{NIC: nicID, Addr: addrB, Port: probePort}, ipv4.ProtocolNumber)
	if err != nil {
		return err
	}
	h.track(probeL)
	h.wg.Add(2)
	go func() {
		defer h.wg.Done()
		for {
			conn, err := bulkL.Accept()
			if err != nil {
				return
			}
			h.track(conn)
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				if err := receive(conn, &h.received, h.streamBytes); err != nil && !h.stopping.Load() {
					h.contentErr.CompareAndSwap(nil, &err)
				}
			}()
		}
	}()
	go func() {
		defer h.wg.Done()
		conn, err := probeL.Accept()
		if err != nil {
			return
		}
		h.track(conn)
		buf := make([]byte, probeSize)
		for {
			if _, err := io.ReadFull(conn, buf); err != nil {
				return
			}
			if _, err := conn.Write(buf); err != nil {
				return
			}
		}
	}()
	return nil
}

// startSenders dials the bulk streams from A, each writing its content
// until tearDown.
func (h *harness) startSenders() error {
	h.start = time.Now()
	for i := 0; i < h.o.Streams; i++ {
		conn, err := gonet.DialTCP(h.sa, tcpip.FullAddress{NIC: nicID, Addr: addrB, Port: bulkPort}, ipv4.ProtocolNumber)
		if err != nil {
			return fmt.Errorf("stream %d: %v", i, err)
		}
		h.track(conn)
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			send(conn, uint64(i)+1, h.o.Pace/uint64(h.o.Streams), h.start)
		}()
	}
	return nil
}

// send writes stream id's content to conn until it fails: as fast as TCP
// takes it, or paced at pace bytes/s.
func send(conn net.Conn, id, pace uint64, start time.Time) {
	var hdr [8]byte
	for i := range hdr {
		hdr[i] = byte(id >> (8 * i))
	}
	if _, err := conn.Write(hdr[:]); err != nil {
		return
	}
	chunk := uint64(64 << 10)
	if pace != 0 {
		chunk = min(chunk, max(1024, pace/200))
	}
	buf := make([]byte, chunk)
	var off uint64
	for {
		fill(buf, id, off)
		if _, err := conn.Write(buf); err != nil {
			return
		}
		off += chunk
		if pace != 0 {
			if ahead := time.Duration(float64(off)/float64(pace)*1e9) - time.Since(start); ahead > 0 {
				time.Sleep(ahead)
			}
		}
	}
}

// receive reads a stream and checks every byte against its content.
func receive(conn net.Conn, received *atomic.Uint64, perStream []atomic.Uint64) error {
	var hdr [8]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return nil // closed before it began
	}
	var id uint64
	for i := range hdr {
		id |= uint64(hdr[i]) << (8 * i)
	}
	var mine atomic.Uint64
	stream := &mine
	if id < uint64(len(perStream)) {
		stream = &perStream[id]
	}
	buf := make([]byte, 64<<10)
	want := make([]byte, 64<<10)
	var off uint64
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			fill(want[:n], id, off)
			for i := 0; i < n; i++ {
				if buf[i] != want[i] {
					return fmt.Errorf("stream %d: byte %d is %#x, want %#x", id, off+uint64(i), buf[i], want[i])
				}
			}
			off += uint64(n)
			received.Add(uint64(n))
			stream.Add(uint64(n))
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return nil // reset at the end of the run
		}
	}
}
