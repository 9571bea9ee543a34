package fq

// longest is a max-heap of the flows that hold packets, by the bytes they
// hold, so that a full queue finds the flow to drop from in constant time
// and keeps it in order in log(flows) per packet, as cake's heap of
// backlogs does: a flood of one-packet flows (a UDP sender's random
// ports) would otherwise make every arrival at a full queue scan them
// all (45 µs a packet with 10000 flows).
type longest struct {
	heap []int32
}

// top returns the flow holding the most bytes, or none.
func (h *longest) top() int32 {
	if len(h.heap) == 0 {
		return none
	}
	return h.heap[0]
}

// fix puts flow idx where its bytes now place it: in the heap if it holds
// packets, out of it if not.
func (h *longest) fix(flows []flow, idx int32) {
	f := &flows[idx]
	switch {
	case f.len() == 0 && f.heapPos == 0:
	case f.len() == 0:
		h.remove(flows, int(f.heapPos-1))
	case f.heapPos == 0:
		h.heap = append(h.heap, idx)
		f.heapPos = int32(len(h.heap))
		h.up(flows, len(h.heap)-1)
	default:
		if i := int(f.heapPos - 1); !h.up(flows, i) {
			h.down(flows, i)
		}
	}
}

// reset empties the heap, taking every flow out of it.
func (h *longest) reset(flows []flow) {
	for _, idx := range h.heap {
		flows[idx].heapPos = 0
	}
	h.heap = h.heap[:0]
}

// remove takes the flow at position i out of the heap.
func (h *longest) remove(flows []flow, i int) {
	last := len(h.heap) - 1
	flows[h.heap[i]].heapPos = 0
	if i != last {
		h.set(flows, i, h.heap[last])
	}
	h.heap = h.heap[:last]
	if i != last && !h.up(flows, i) {
		h.down(flows, i)
	}
}

// up moves the flow at position i towards the top while it holds more
// than its parent; it reports whether it moved.
func (h *longest) up(flows []flow, i int) bool {
	moved := false
	for i > 0 {
		parent := (i - 1) / 2
		if flows[h.heap[i]].bytes <= flows[h.heap[parent]].bytes {
			break
		}
		h.swap(flows, i, parent)
		i, moved = parent, true
	}
	return moved
}

// down moves the flow at position i away from the top while a child holds
// more.
func (h *longest) down(flows []flow, i int) {
	for {
		big, l := i, 2*i+1
		if l < len(h.heap) && flows[h.heap[l]].bytes > flows[h.heap[big]].bytes {
			big = l
		}
		if r := l + 1; r < len(h.heap) && flows[h.heap[r]].bytes > flows[h.heap[big]].bytes {
			big = r
		}
		if big == i {
			return
		}
		h.swap(flows, i, big)
		i = big
	}
}

func (h *longest) swap(flows []flow, i, j int) {
	a, b := h.heap[i], h.heap[j]
	h.set(flows, i, b)
	h.set(flows, j, a)
}

func (h *longest) set(flows []flow, i int, idx int32) {
	h.heap[i] = idx
	flows[idx].heapPos = int32(i + 1)
}
