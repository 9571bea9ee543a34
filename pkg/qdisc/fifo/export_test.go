package fifo

// Quiescent reports whether every dispatcher is asleep with nothing it can
// do before a timer fires or a packet arrives.
func (d *Discipline) Quiescent() bool { return d.lanes.Quiescent() }
