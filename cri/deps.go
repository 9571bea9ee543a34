//go:build tools

// Package cri pins, in this module's go.mod and go.sum, the programs
// cri/build.sh builds from other modules here: gVisor's shim and the CNI
// plugins (containerd's programs are pinned by cri/containerd/go.mod).
// This file is never compiled.
package cri

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/meta/bandwidth"
	_ "gvisor.dev/gvisor/shim"
)
