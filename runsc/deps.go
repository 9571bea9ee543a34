//go:build netqdisc_runsc_deps

// Package runsc keeps runsc's dependencies in this module's go.mod and
// go.sum, so that build.sh builds gvisor.dev/gvisor/runsc reproducibly.
package runsc

import (
	_ "gvisor.dev/gvisor/runsc/cli/maincli"
	_ "gvisor.dev/gvisor/runsc/version"

	_ "github.com/netqdisc/netqdisc/runsc-flags"
)
