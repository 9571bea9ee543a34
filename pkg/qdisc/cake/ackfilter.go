package cake

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// The ACK filter (sch_cake.c's cake_ack_filter): when a TCP packet with
// ACK set joins a flow's queue, a pure ACK already queued for the same
// connection that it supersedes is dropped, as long as nothing it carries
// would be lost: no data, no flags but ACK (ECE and CWR only as the ones
// around it), no options but SACK, timestamps no newer and MD5, and no
// SACK block the new one does not cover.

// TCP flags in the word of bytes 12 to 15 of a TCP header (Linux's
// tcp_flag_word).
const (
	flagCWR = 0x00800000
	flagECE = 0x00400000
	flagACK = 0x00100000
	flagSYN = 0x00020000
	// flagsNotECN is every flag and reserved bit but CWR and ECE.
	flagsNotECN = 0x0F3F0000
)

// TCP option kinds.
const (
	optEOL       = 0
	optNOP       = 1
	optMD5       = 19
	optSACK      = 5
	optTimestamp = 8
	lenTimestamp = 10
)

// ipprotoIPv6 is IPv6 tunnelled in IPv4's protocol number (6in4).
const ipprotoIPv6 = 41

// tcpInfo is what the filter reads of a TCP packet.
type tcpInfo struct {
	version uint8
	// addrs holds the source then the destination address (4 or 16
	// bytes each).
	addrs  [32]byte
	naddr  int
	ports  uint32
	flags  uint32
	ack    uint32
	seglen int // the IP payload's length, TCP header included
	hdrLen int // the TCP header's, doff*4
	opts   [40]byte
}

// options returns the TCP options.
func (t *tcpInfo) options() []byte { return t.opts[:t.hdrLen-header.TCPMinimumSize] }

// parseTCP reads pkt as cake_get_iphdr and cake_get_tcphdr do: IPv4 (and
// IPv6 in IPv4, the common 6in4 tunnel) or IPv6 with TCP next, the whole
// TCP header there. It reports false for anything else, or anything cut
// short or malformed (an IPv4 IHL below 5, a TCP data offset below 5).
func parseTCP(pkt *stack.PacketBuffer, t *tcpInfo) bool {
	var buf [maxWindow]byte
	b := buf[:window(pkt, buf[:])]
	// Linux reads an IPv6 header's worth first, whatever the version.
	if len(b) < header.IPv6MinimumSize {
		return false
	}
	*t = tcpInfo{}
	off := 0
	switch b[0] >> 4 {
	case 4:
		ihl := int(b[0]&0xf) * 4
		if ihl < header.IPv4MinimumSize || ihl > len(b) {
			return false
		}
		switch b[9] {
		case ipprotoIPv6:
			off = ihl
			if off+header.IPv6MinimumSize > len(b) || b[off]>>4 != 6 || b[off+6] != uint8(header.TCPProtocolNumber) {
				return false
			}
			t.version = 6
			t.naddr = copy(t.addrs[:], b[off+8:off+40])
			t.seglen = int(binary.BigEndian.Uint16(b[off+4:]))
			off += header.IPv6MinimumSize
		case uint8(header.TCPProtocolNumber):
			t.version = 4
			t.naddr = copy(t.addrs[:], b[12:20])
			t.seglen = int(binary.BigEndian.Uint16(b[2:])) - ihl
			off = ihl
		default:
			return false
		}
	case 6:
		if b[6] != uint8(header.TCPProtocolNumber) {
			return false
		}
		t.version = 6
		t.naddr = copy(t.addrs[:], b[8:40])
		t.seglen = int(binary.BigEndian.Uint16(b[4:]))
		off = header.IPv6MinimumSize
	default:
		return false
	}
	if off+header.TCPMinimumSize > len(b) {
		return false
	}
	tcp := b[off:]
	t.hdrLen = int(tcp[12]>>4) * 4
	if t.hdrLen < header.TCPMinimumSize || t.hdrLen > len(tcp) {
		return false
	}
	t.ports = binary.BigEndian.Uint32(tcp[0:4])
	t.ack = binary.BigEndian.Uint32(tcp[8:12])
	t.flags = binary.BigEndian.Uint32(tcp[12:16])
	copy(t.opts[:], tcp[header.TCPMinimumSize:t.hdrLen])
	return true
}

// tcpOption returns the contents of the first option of kind code in
// opts, and its length (kind and length bytes included), walking the
// options as Linux's tcp_parse_options does: a length that runs past the
// options, or below 2, ends the walk.
func tcpOption(opts []byte, code byte) (body []byte, size int) {
	for len(opts) > 0 {
		kind := opts[0]
		if kind == optEOL {
			break
		}
		if kind == optNOP {
			opts = opts[1:]
			continue
		}
		if len(opts) < 2 {
			break
		}
		n := int(opts[1])
		if n < 2 || n > len(opts) {
			break
		}
		if kind == code {
			return opts[2:n], n
		}
		opts = opts[n:]
	}
	return nil, 0
}

// tstamp returns the TSval and TSecr of a timestamp option, 0 without one.
func (t *tcpInfo) tstamp() (val, ecr uint32) {
	if b, n := tcpOption(t.options(), optTimestamp); n == lenTimestamp {
		return binary.BigEndian.Uint32(b[0:4]), binary.BigEndian.Uint32(b[4:8])
	}
	return 0, 0
}

// seqAfter and seqBefore compare TCP sequence numbers modulo 2^32.
func seqAfter(a, b uint32) bool  { return int32(a-b) > 0 }
func seqBefore(a, b uint32) bool { return int32(a-b) < 0 }

// mayDrop is cake_tcph_may_drop: t has ACK and no other flag (but ECE and
// CWR) or reserved bit, and no option but MD5, well-formed SACK and a
// timestamp no newer than the new ACK's (tsval, tsecr).
func (t *tcpInfo) mayDrop(tsval, tsecr uint32) bool {
	if t.flags&flagsNotECN != flagACK {
		return false
	}
	opts := t.options()
	for len(opts) > 0 {
		kind := opts[0]
		if kind == optEOL {
			break
		}
		if kind == optNOP {
			opts = opts[1:]
			continue
		}
		if len(opts) < 2 {
			break
		}
		n := int(opts[1])
		if n < 2 || n > len(opts) {
			break
		}
		switch kind {
		case optMD5:
		case optSACK:
			if n%8 != 2 {
				return false
			}
		case optTimestamp:
			if n != lenTimestamp {
				return false
			}
			v, e := binary.BigEndian.Uint32(opts[2:6]), binary.BigEndian.Uint32(opts[6:10])
			if seqAfter(v, tsval) || seqAfter(e, tsecr) {
				return false
			}
		default:
			return false
		}
		opts = opts[n:]
	}
	return true
}

// sackCompare is cake_tcph_sack_compare: -1 if a SACKs something b does
// not (or a D-SACK), 1 if b SACKs more bytes than a and all of a's, 0 if
// they SACK the same (or neither SACKs).
func sackCompare(a, b *tcpInfo) int {
	sa, na := tcpOption(a.options(), optSACK)
	sb, nb := tcpOption(b.options(), optSACK)
	hasA := sa != nil && na-2 >= 8
	hasB := sb != nil && nb-2 >= 8
	switch {
	case hasA && !hasB:
		return -1
	case hasB && !hasA:
		return 1
	case !hasA && !hasB:
		return 0
	}
	var bytesA, bytesB uint32
	first := true
	for ; len(sa) >= 8; sa = sa[8:] {
		startA, endA := binary.BigEndian.Uint32(sa[0:4]), binary.BigEndian.Uint32(sa[4:8])
		if seqBefore(startA, a.ack) {
			return -1 // a D-SACK
		}
		bytesA += endA - startA
		found := false
		for tb := sb; len(tb) >= 8; tb = tb[8:] {
			startB, endB := binary.BigEndian.Uint32(tb[0:4]), binary.BigEndian.Uint32(tb[4:8])
			if first {
				bytesB += endB - startB
			}
			if !seqAfter(startB, startA) && !seqBefore(endB, endA) {
				found = true
				if !first {
					break
				}
			}
		}
		if !found {
			return -1
		}
		first = false
	}
	if bytesB > bytesA {
		return 1
	}
	return 0
}

// sameConnection reports whether a and b are of one TCP connection, in one
// direction.
func sameConnection(a, b *tcpInfo) bool {
	return a.version == b.version && a.ports == b.ports && a.naddr == b.naddr && a.addrs == b.addrs
}

// ackFilter looks, in flow f of tin b, for a queued pure ACK that the
// packet just queued at f's tail supersedes, unlinks it and returns its
// entry (none if there is none), as cake_ack_filter does: in the default
// mode the ACK nearest the head once two are eligible; aggressive, also a
// single eligible ACK right before the new packet with the same ECN flags.
func (s *Sched) ackFilter(f *flow) int32 {
	if f.head == f.tail {
		return none
	}
	aggressive := s.cfg.AckFilter == AckFilterAggressive
	var trig, chk tcpInfo
	if !parseTCP(s.pool.e[f.tail].pkt, &trig) {
		return none
	}
	tsval, tsecr := trig.tstamp()
	if trig.flags&(flagACK|flagSYN) != flagACK {
		return none
	}
	elig, eligPrev := int32(none), int32(none)
	var eligFlags uint32
	found := 0
	prev := int32(none)
	for i := f.head; i != none && i != f.tail; prev, i = i, s.pool.e[i].next {
		if !parseTCP(s.pool.e[i].pkt, &chk) || !sameConnection(&chk, &trig) {
			continue
		}
		if elig != none && chk.flags&(flagECE|flagCWR) != eligFlags {
			elig, eligPrev = none, none
			found--
		}
		if !chk.mayDrop(tsval, tsecr) || chk.seglen-chk.hdrLen != 0 || seqAfter(chk.ack, trig.ack) {
			continue
		}
		c := sackCompare(&chk, &trig)
		if c < 0 || (chk.ack == trig.ack && c == 0) {
			continue
		}
		if elig == none {
			elig, eligPrev = i, prev
			eligFlags = chk.flags & (flagECE | flagCWR)
		}
		found++
		if found > 1 {
			return s.unlink(f, elig, eligPrev)
		}
	}
	if elig != none && aggressive && s.pool.e[elig].next == f.tail && eligFlags == trig.flags&(flagECE|flagCWR) {
		return s.unlink(f, elig, eligPrev)
	}
	return none
}

// unlink takes entry i, after prev (none: the head), out of f's queue.
// It is never f's tail.
func (s *Sched) unlink(f *flow, i, prev int32) int32 {
	if prev == none {
		f.head = s.pool.e[i].next
	} else {
		s.pool.e[prev].next = s.pool.e[i].next
	}
	s.pool.e[i].next = none
	return i
}
