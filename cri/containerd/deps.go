//go:build tools

// Package containerd pins the programs cri/build.sh builds from
// containerd in this module's go.mod and go.sum (never compiled).
package containerd

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
