package node

// Kill stops r's timer and leaves its slot held, as a sandbox killed
// with SIGKILL leaves it: the others must count it gone after Stale.
func (r *Runner) Kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
	}
}
