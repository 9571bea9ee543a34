package fifo

// Quiescent reports whether every dispatcher is asleep with an empty queue.
func (d *Discipline) Quiescent() bool {
	for i := range d.lanes {
		if !d.lanes[i].Quiescent() {
			return false
		}
	}
	return true
}
