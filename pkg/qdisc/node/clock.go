package node

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Now is the node's time: CLOCK_MONOTONIC in ns, which the allocator and
// every sandbox of the node (whose Sentry reads the host's clock) read
// alike.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err)) // cannot fail on Linux
	}
	return ts.Nano()
}
