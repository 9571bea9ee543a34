package caketest

import (
	"bytes"
	"encoding/binary"
)

// TCP option kinds and flag bits (in tcp_flag_word, the header's fourth
// 32-bit word, big endian) the ACK filter reads.
const (
	tcpoptEOL       = 0
	tcpoptNOP       = 1
	tcpoptSACK      = 5
	tcpoptTimestamp = 8
	tcpoptMD5       = 19
	tcpolenTS       = 10
	tcpolenSACKBase = 2
	sackBlockLen    = 8

	tcpFlagCWR = 0x00800000
	tcpFlagECE = 0x00400000
	tcpFlagACK = 0x00100000
	tcpFlagSYN = 0x00020000
	// tcpFlagsNoECN is every flag and the reserved bits but CWR and ECE.
	tcpFlagsNoECN = 0x0F3F0000
)

// before and after compare TCP sequence numbers modulo 2^32.
func before(a, b uint32) bool { return int32(a-b) < 0 }
func after(a, b uint32) bool  { return before(b, a) }

// ipView is cake_get_iphdr's answer: the IPv4 header, or for IPv4 carrying
// IPv6 (6in4) and for IPv6 the IPv6 header.
type ipView struct {
	version  uint8
	src, dst []byte
	// hdr is the header itself.
	hdr []byte
	off int
}

// getIPHdr is cake_get_iphdr.
func getIPHdr(p *Packet) (ipView, bool) {
	h := p.at(0, 20)
	if h == nil {
		return ipView{}, false
	}
	switch v := h[0] >> 4; {
	case v == 4 && h[9] == ipprotoIPv6:
		off := int(h[0]&0xf) * 4
		h6 := p.at(off, 40)
		if h6 == nil {
			return ipView{}, false
		}
		return ipView{version: h6[0] >> 4, src: h6[8:24], dst: h6[24:40], hdr: h6, off: off}, true
	case v == 4:
		return ipView{version: 4, src: h[12:16], dst: h[16:20], hdr: h}, true
	case v == 6:
		h6 := p.at(0, 40)
		if h6 == nil {
			return ipView{}, false
		}
		return ipView{version: 6, src: h6[8:24], dst: h6[24:40], hdr: h6}, true
	}
	return ipView{}, false
}

// tcpHdr is a TCP header and its options, as cake_get_tcphdr copies it
// (at most 64 bytes).
type tcpHdr []byte

func (t tcpHdr) sport() uint16    { return binary.BigEndian.Uint16(t[0:2]) }
func (t tcpHdr) dport() uint16    { return binary.BigEndian.Uint16(t[2:4]) }
func (t tcpHdr) ackSeq() uint32   { return binary.BigEndian.Uint32(t[8:12]) }
func (t tcpHdr) flagWord() uint32 { return binary.BigEndian.Uint32(t[12:16]) }
func (t tcpHdr) hdrLen() int      { return int(t[12]>>4) * 4 }
func (t tcpHdr) options() []byte  { return t[20:min(t.hdrLen(), len(t))] }

// getTCPHdr is cake_get_tcphdr: the TCP header of an IPv4, IPv6 (no
// extension headers) or 6in4 packet. Like Linux it first wants 40 bytes
// at the network header, whatever the version.
func getTCPHdr(p *Packet) (tcpHdr, bool) {
	h := p.at(0, 40)
	if h == nil {
		return nil, false
	}
	off := 0
	switch h[0] >> 4 {
	case 4:
		off += int(h[0]&0xf) * 4
		if h[9] == ipprotoIPv6 {
			h6 := p.at(off, 40)
			if h6 == nil || h6[6] != ipprotoTCP {
				return nil, false
			}
			off += 40
		} else if h[9] != ipprotoTCP {
			return nil, false
		}
	case 6:
		if h[6] != ipprotoTCP {
			return nil, false
		}
		off += 40
	default:
		return nil, false
	}
	th := p.at(off, 20)
	if th == nil || th[12]>>4 < 5 {
		return nil, false
	}
	full := p.at(off, min(int(th[12]>>4)*4, 64))
	if full == nil {
		return nil, false
	}
	return tcpHdr(full), true
}

// tcpOpt is cake_get_tcpopt: the contents of the first option of kind
// code, and the option's length (kind and length bytes included).
func tcpOpt(t tcpHdr, code uint8) ([]byte, int, bool) {
	b := t.options()
	length := t.hdrLen() - 20
	i := 0
	for length > 0 {
		if i >= len(b) {
			break
		}
		opcode := b[i]
		i++
		if opcode == tcpoptEOL {
			break
		}
		if opcode == tcpoptNOP {
			length--
			continue
		}
		if length < 2 || i >= len(b) {
			break
		}
		opsize := int(b[i])
		i++
		if opsize < 2 || opsize > length {
			break
		}
		if opcode == code {
			end := min(i+opsize-2, len(b))
			return b[i:end], opsize, true
		}
		i += opsize - 2
		length -= opsize
	}
	return nil, 0, false
}

// sackCompare is cake_tcph_sack_compare: -1 if a SACKs something b does
// not (or a carries a DSACK: a block below its cumulative ACK), 1 if b
// SACKs strictly more bytes and covers all of a's blocks, else 0.
func sackCompare(a, b tcpHdr) int {
	ackA := a.ackSeq()
	sa, lenA, okA := tcpOpt(a, tcpoptSACK)
	sb, lenB, okB := tcpOpt(b, tcpoptSACK)
	lenA -= tcpolenSACKBase
	lenB -= tcpolenSACKBase
	validA := okA && lenA >= sackBlockLen
	validB := okB && lenB >= sackBlockLen
	switch {
	case validA && !validB:
		return -1
	case validB && !validA:
		return 1
	case !validA && !validB:
		return 0
	}
	var bytesA, bytesB uint32
	first := true
	for ia := 0; lenA >= sackBlockLen; ia += sackBlockLen {
		startA := binary.BigEndian.Uint32(sa[ia:])
		endA := binary.BigEndian.Uint32(sa[ia+4:])
		if before(startA, ackA) {
			return -1 // DSACK: never drop it
		}
		bytesA += endA - startA
		found := false
		for ib, lenTmp := 0, lenB; lenTmp >= sackBlockLen; ib, lenTmp = ib+sackBlockLen, lenTmp-sackBlockLen {
			startB := binary.BigEndian.Uint32(sb[ib:])
			endB := binary.BigEndian.Uint32(sb[ib+4:])
			if first {
				bytesB += endB - startB
			}
			if !after(startB, startA) && !before(endB, endA) {
				found = true
				if !first {
					break
				}
			}
		}
		if !found {
			return -1
		}
		lenA -= sackBlockLen
		first = false
	}
	if bytesB > bytesA {
		return 1
	}
	return 0
}

// tstamp is cake_tcph_get_tstamp: the timestamp option's values, 0 and 0
// without a well-formed one.
func tstamp(t tcpHdr) (tsval, tsecr uint32) {
	v, size, ok := tcpOpt(t, tcpoptTimestamp)
	if ok && size == tcpolenTS && len(v) >= 8 {
		return binary.BigEndian.Uint32(v[0:4]), binary.BigEndian.Uint32(v[4:8])
	}
	return 0, 0
}

// mayDrop is cake_tcph_may_drop: whether an ACK with header t carries
// nothing a later ACK with timestamps tsNew, tsecrNew would not: ACK set,
// no other flag but ECE/CWR, and only MD5, SACK (well sized) and a
// timestamp option not after the new one's.
func mayDrop(t tcpHdr, tsNew, tsecrNew uint32) bool {
	if t.flagWord()&tcpFlagsNoECN != tcpFlagACK {
		return false
	}
	b := t.options()
	length := t.hdrLen() - 20
	i := 0
	for length > 0 {
		if i >= len(b) {
			break
		}
		opcode := b[i]
		i++
		if opcode == tcpoptEOL {
			break
		}
		if opcode == tcpoptNOP {
			length--
			continue
		}
		if length < 2 || i >= len(b) {
			break
		}
		opsize := int(b[i])
		i++
		if opsize < 2 || opsize > length {
			break
		}
		switch opcode {
		case tcpoptMD5:
		case tcpoptSACK:
			if opsize%8 != 2 {
				return false
			}
		case tcpoptTimestamp:
			if opsize != tcpolenTS || i+8 > len(b) {
				return false
			}
			ts := binary.BigEndian.Uint32(b[i:])
			ecr := binary.BigEndian.Uint32(b[i+4:])
			if after(ts, tsNew) || after(ecr, tsecrNew) {
				return false
			}
		default: // MSS, window, SACK-permitted, fast open, unknown
			return false
		}
		i += opsize - 2
		length -= opsize
	}
	return true
}

// ipPayloadLen is iph_totlen minus the IPv4 header, or ipv6_payload_len:
// the bytes after the IP header the length fields claim (for a GSO TCP
// packet whose field is 0, what the packet holds).
func ipPayloadLen(p *Packet, ip ipView) int {
	if ip.version == 4 {
		n := int(binary.BigEndian.Uint16(ip.hdr[2:4]))
		if n == 0 && p.isGSO() {
			n = len(p.Data)
		}
		return n - 4*int(ip.hdr[0]&0xf)
	}
	n := int(binary.BigEndian.Uint16(ip.hdr[4:6]))
	if n == 0 && p.isGSO() {
		n = len(p.Data) - 40
	}
	return n
}

// ackFilter is cake_ack_filter, run after the packet at the tail of f's
// queue was added: it returns the position in f's queue of an older pure
// ACK of the same connection that the new one makes redundant, or -1.
func ackFilter(mode AckFilter, f *flow) int {
	aggressive := mode == AckAggressive
	if len(f.queue) < 2 {
		return -1
	}
	tail := &f.queue[len(f.queue)-1].pkt
	tcph, ok := getTCPHdr(tail)
	if !ok {
		return -1
	}
	iph, _ := getIPHdr(tail)
	tsNew, tsecrNew := tstamp(tcph)

	// The triggering packet needs ACK and not SYN.
	if tcph.flagWord()&(tcpFlagACK|tcpFlagSYN) != tcpFlagACK {
		return -1
	}

	elig := -1
	var eligFlags uint32
	numFound := 0
	for i := 0; i < len(f.queue)-1; i++ {
		check := &f.queue[i].pkt
		iphCheck, _ := getIPHdr(check)
		tcphCheck, ok := getTCPHdr(check)
		if !ok || iph.version != iphCheck.version ||
			tcphCheck.sport() != tcph.sport() || tcphCheck.dport() != tcph.dport() {
			continue
		}
		var seglen int
		switch iphCheck.version {
		case 4, 6:
			if !bytes.Equal(iphCheck.src, iph.src) || !bytes.Equal(iphCheck.dst, iph.dst) {
				continue
			}
			seglen = ipPayloadLen(check, iphCheck)
		default:
			continue
		}

		// ECE/CWR changed since the first eligible ACK: dropping that
		// one would lose the signal.
		if elig >= 0 && tcphCheck.flagWord()&(tcpFlagECE|tcpFlagCWR) != eligFlags {
			elig = -1
			numFound--
		}

		if !mayDrop(tcphCheck, tsNew, tsecrNew) ||
			seglen-tcphCheck.hdrLen() != 0 ||
			after(tcphCheck.ackSeq(), tcph.ackSeq()) {
			continue
		}

		sackComp := sackCompare(tcphCheck, tcph)
		if sackComp < 0 || (tcphCheck.ackSeq() == tcph.ackSeq() && sackComp == 0) {
			continue
		}

		if elig < 0 {
			elig = i
			eligFlags = tcphCheck.flagWord() & (tcpFlagECE | tcpFlagCWR)
		}
		numFound++
		if numFound > 1 {
			return elig
		}
	}

	// One eligible ACK: aggressive mode drops it if it sits right before
	// the new one and their ECN flags agree.
	if elig >= 0 && aggressive && elig == len(f.queue)-2 &&
		eligFlags == tcph.flagWord()&(tcpFlagECE|tcpFlagCWR) {
		return elig
	}
	return -1
}
