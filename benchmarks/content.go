package benchmarks

import "encoding/binary"

// Stream content is a function of (stream, offset), so a receiver can check
// every byte it gets, in place, without buffering what was sent: shaping
// may delay or drop packets, never corrupt or reorder a stream.

func word(stream, index uint64) uint64 {
	// splitmix64 of the stream and the word's index.
	z := stream<<40 ^ index + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// fill writes the stream's bytes for offsets [off, off+len(b)) into b.
func fill(b []byte, stream, off uint64) {
	for len(b) > 0 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], word(stream, off/8))
		n := copy(b, w[off%8:])
		b, off = b[n:], off+uint64(n)
	}
}
