package fq_test

import "fmt"

// fmtSscanf reads fq's xstats.
func fmtSscanf(x string, flows, inactive, gc, plimit *int) (int, error) {
	return fmt.Sscanf(x, "  flows %d (inactive %d throttled 0)\n  gc %d highprio 0 throttled 0 flows_plimit %d", flows, inactive, gc, plimit)
}
