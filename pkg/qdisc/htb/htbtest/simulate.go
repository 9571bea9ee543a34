package htbtest

import (
	"fmt"
	"math"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// maxSteps bounds a run's steps: a model or tree that keeps asking to be
// called without sending is a bug, not a long test.
const maxSteps = 10_000_000

// Simulate runs the model alone from time 0: at each time, the watchdog's
// dequeue, then the changes (each followed by a dequeue), then the
// arrivals (each followed by a dequeue), until nothing is left to do. A
// change the model refuses is skipped.
// Arrivals and changes must be in time order.
func Simulate(cfg htb.Config, arrivals []Arrival, changes []Change) (*Model, error) {
	m, err := NewModel(cfg, 0)
	if err != nil {
		return nil, err
	}
	i, c := 0, 0
	for step := 0; ; step++ {
		if step > maxSteps {
			return m, fmt.Errorf("no end after %d steps", step)
		}
		next := nextTime(arrivals, i, changes, c, m.Watchdog, -1)
		if next == math.MaxInt64 {
			return m, nil
		}
		if m.Watchdog == next {
			m.Dequeue(next)
		}
		for ; c < len(changes) && changes[c].At == next; c++ {
			if changes[c].Purge {
				m.Purge()
				continue
			}
			// A change Linux refuses changes nothing.
			_ = m.Change(changes[c].Class, next)
			m.Dequeue(next)
		}
		for ; i < len(arrivals) && arrivals[i].At == next; i++ {
			m.Enqueue(next, uint64(i), arrivals[i].Class, arrivals[i].Size)
			m.Dequeue(next)
		}
	}
}

// nextTime is the earliest of the next arrival, the next change and the
// armed timers (-1: not armed), offsets from 0; MaxInt64 when none.
func nextTime(arrivals []Arrival, i int, changes []Change, c int, timers ...int64) int64 {
	next := int64(math.MaxInt64)
	if i < len(arrivals) {
		next = arrivals[i].At
	}
	if c < len(changes) {
		next = min(next, changes[c].At)
	}
	for _, t := range timers {
		if t >= 0 {
			next = min(next, t)
		}
	}
	return next
}
