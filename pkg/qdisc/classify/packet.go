package classify

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// fields is what a rule may test of a packet with a well-formed network
// header.
type fields struct {
	family       uint8 // 4 or 6
	dst, src     addr
	dscp         uint8
	proto        uint8
	protoKnown   bool
	dport, sport uint16
	portsKnown   bool
	// wantPorts is set by the caller: read the ports (no rule tests them
	// otherwise, and they are left unknown).
	wantPorts bool
}

// maxExtensions is the most IPv6 extension headers parseIPv6 walks.
const maxExtensions = 8

func parseIPv4(b *packetBytes, scratch []byte, f *fields) bool {
	h := b.first // in place, as at would give it, without the call
	if len(h) < header.IPv4MinimumSize {
		var ok bool
		if h, ok = b.atSlow(0, header.IPv4MinimumSize, scratch); !ok {
			return false
		}
	}
	if h[0]>>4 != 4 {
		return false
	}
	ihl := int(h[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(h[2:4]))
	if ihl < header.IPv4MinimumSize || total < ihl || total > b.size {
		return false
	}
	f.family = 4
	f.dscp = h[1] >> 2
	f.proto, f.protoKnown = h[9], true
	f.src[1] = uint64(binary.BigEndian.Uint32(h[12:16]))
	f.dst[1] = uint64(binary.BigEndian.Uint32(h[16:20]))
	fragment := binary.BigEndian.Uint16(h[6:8])&0x3fff != 0 // more fragments, or an offset
	if !fragment && f.wantPorts {
		f.readPorts(b, ihl, total, scratch)
	}
	return true
}

func parseIPv6(b *packetBytes, scratch []byte, f *fields) bool {
	h, ok := b.at(0, header.IPv6MinimumSize, scratch)
	if !ok || h[0]>>4 != 6 {
		return false
	}
	end := header.IPv6MinimumSize + int(binary.BigEndian.Uint16(h[4:6]))
	if end > b.size {
		return false
	}
	f.family = 6
	f.dscp = (h[0]<<4 | h[1]>>4) >> 2
	f.src = addr{binary.BigEndian.Uint64(h[8:16]), binary.BigEndian.Uint64(h[16:24])}
	f.dst = addr{binary.BigEndian.Uint64(h[24:32]), binary.BigEndian.Uint64(h[32:40])}
	next, off := h[6], header.IPv6MinimumSize
	for exts := 0; isExtension(next); exts++ {
		if exts == maxExtensions {
			return false
		}
		var n int
		switch next {
		case fragment:
			e, ok := b.at(off, 8, scratch)
			if !ok || off+8 > end {
				return false
			}
			// Every fragment names the same next header; past it, only
			// the first fragment carries anything. No ports for any.
			f.proto, f.protoKnown = e[0], !isExtension(e[0])
			return true
		case authentication:
			e, ok := b.at(off, 2, scratch)
			if !ok || off+2 > end {
				return false
			}
			next, n = e[0], (int(e[1])+2)*4
		default: // RFC 6564's format
			e, ok := b.at(off, 2, scratch)
			if !ok || off+2 > end {
				return false
			}
			next, n = e[0], (int(e[1])+1)*8
		}
		if off += n; off > end {
			return false
		}
	}
	f.proto, f.protoKnown = next, true
	if f.wantPorts {
		f.readPorts(b, off, end, scratch)
	}
	return true
}

// readPorts reads the ports of f's protocol from a transport header at off
// in b if the whole of its least header lies before end.
func (f *fields) readPorts(b *packetBytes, off, end int, scratch []byte) {
	n, ok := hasPorts(f.proto)
	if !ok || off+n > end {
		return
	}
	var p []byte
	if off+4 <= len(b.first) { // in place, as at would give it
		p = b.first[off : off+4]
	} else if p, ok = b.atSlow(off, 4, scratch); !ok {
		return
	}
	f.sport = binary.BigEndian.Uint16(p[0:2])
	f.dport = binary.BigEndian.Uint16(p[2:4])
	f.portsKnown = true
}

// IPv6 extension header types (RFC 8200, RFC 7045, RFC 6564).
const (
	hopByHop       = 0
	routing        = 43
	fragment       = 44
	authentication = 51
	destOptions    = 60
	mobility       = 135
	hip            = 139
	shim6          = 140
	experiment1    = 253
	experiment2    = 254
)

func isExtension(p uint8) bool {
	switch p {
	case hopByHop, routing, fragment, authentication, destOptions, mobility, hip, shim6, experiment1, experiment2:
		return true
	}
	return false
}
