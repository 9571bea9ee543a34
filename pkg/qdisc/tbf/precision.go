package tbf

import (
	"fmt"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// TimerGranularity is how late a Go timer can fire in an idle process on
// Linux: the runtime waits in epoll_wait, which counts whole milliseconds
// (docs/results.md, Small bursts).
const TimerGranularity = time.Millisecond

// PrecisionError says that a configuration asks for burst precision the
// platform cannot give. It is a warning: the qdisc works, and holds the
// rate on average.
type PrecisionError struct {
	// Bucket is how long the burst lasts at the rate; Late how late a
	// departure may be (TimerGranularity plus the slack).
	Bucket, Late time.Duration
	// Burst is the configured burst; Worst the most bytes that may leave
	// back to back after a late wake-up.
	Burst, Worst uint64
	// Suggest is the burst at which the bucket outlasts the lateness.
	Suggest uint64
}

func (e *PrecisionError) Error() string {
	return fmt.Sprintf("burst %d bytes lasts %v at this rate, less than the %v by which a dispatcher's wake-up may be late: the rate holds on average (late departures catch up), but packets may leave back to back in bursts of up to about %d bytes; a burst of at least %d bytes keeps them within the bucket",
		e.Burst, e.Bucket, e.Late, e.Worst, e.Suggest)
}

// CheckPrecision reports, as a *PrecisionError, a configuration whose
// bucket lasts less than the time by which departures may be late (timer
// granularity plus slack), so that bursts on the wire may exceed Burst.
// It returns nil for a configuration the platform can hold precisely, and
// does not validate the rest (New does).
func (c Config) CheckPrecision() error {
	if c.Rate == 0 || c.Burst == 0 {
		return nil
	}
	late := TimerGranularity + c.slackInForce()
	r := rate.New(c.Rate)
	bucket := time.Duration(r.TimeNS(c.Burst))
	if bucket >= late {
		return nil
	}
	return &PrecisionError{
		Bucket:  bucket,
		Late:    late,
		Burst:   uint64(c.Burst),
		Worst:   uint64(c.Burst) + r.BytesIn(uint64(late)),
		Suggest: r.BytesIn(uint64(late)),
	}
}
