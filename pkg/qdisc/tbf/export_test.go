package tbf

// Quiescent reports whether every dispatcher is asleep with nothing it can
// do before a timer fires or a packet arrives.
func (d *Discipline) Quiescent() bool {
	for i := range d.lanes {
		if !d.lanes[i].Quiescent() {
			return false
		}
	}
	return true
}
