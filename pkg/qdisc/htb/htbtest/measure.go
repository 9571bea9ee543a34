package htbtest

// Throughput returns the bytes per second class (a leaf, or the handle for
// the direct queue) sent in [from, to): the bytes of its departures in
// that window over its length.
func Throughput(sent []Departure, class uint32, from, to int64) float64 {
	var bytes uint64
	for _, d := range sent {
		if d.Class == class && d.At >= from && d.At < to {
			bytes += uint64(d.Size)
		}
	}
	return float64(bytes) * 1e9 / float64(to-from)
}
