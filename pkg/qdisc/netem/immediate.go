package netem

import (
	"math"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// immediate is the time to send of a packet netem holds for no time:
// before every time, so that it is due at any dequeue. netem gives it
// where nothing it holds has a time of its own and nothing would give
// the packet one (no delay, jitter, rate, slots or reorder): there
// Linux's time to send is the arrival, no later than any dequeue, and
// the packets leave in the order they came either way. netem then needs
// no clock for an arrival, and its lane reads none (ArrivalBlind), as a
// fifo's lane reads none.
const immediate = math.MinInt64

// ArrivalBlind implements qdisc.ArrivalBlind: the lane need not read its
// clock for the packets it queues where netem has a clock of its own
// (its Discipline's lane's, read only for a packet it holds for a time).
// A Queue without one (NewQueue's: a child under a shaper, an htb's leaf
// or a tbf's, Kind.Queue) is timed by the now its parent passes, so it
// asks the parent to read the clock for every arrival.
func (q *Queue) ArrivalBlind() bool { return q.clock != nil }

// timed reports whether a packet queued now may get a time to send other
// than its arrival: a delay, jitter, rate, slots or a reorder's gap is in
// force.
func (q *Queue) timed() bool {
	s := &q.st
	return s.latency != 0 || s.jitter != 0 || s.rate != 0 || s.gap != 0 || q.slotOn
}

// untimed reports whether a packet queued now may be held as immediate:
// nothing gives it a time (timed), and nothing held has one (all the
// packets held are immediate, or none is).
func (q *Queue) untimed() bool {
	if q.timed() {
		return false
	}
	last, ok := q.t.last()
	return !ok || last == immediate
}

// arrival returns now, or, if the lane did not read its clock
// (qdisc.Unstamped), the clock's time; a queue with no clock (NewQueue's,
// which its caller gives times) keeps now.
func (q *Queue) arrival(now int64) int64 {
	if now == qdisc.Unstamped && q.clock != nil {
		return q.clock()
	}
	return now
}

// restamp gives the immediate packets held the time now, when a change
// puts a delay, jitter, rate, slots or a gap in force: all were due by
// then, and the packets queued after them count from it (Linux's have
// their arrivals, all no later than now; a change to a jitter larger than
// its delay may then send a new packet ahead of them where Linux sends it
// after: both are due at once).
func (q *Queue) restamp(now int64) {
	q.t.restamp(immediate, now)
}
