package node

import "unsafe"

// unsafeBytes views w as bytes: 8-byte aligned memory, as a mapping is.
func unsafeBytes(w []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), 8*len(w))
}
