#!/usr/bin/env bash
# Builds what e2e's CRI tests (e2e/cri_test.go) run, into cri/bin/, all from
# the Go module proxy at the versions cri/go.mod and cri/containerd/go.mod
# pin (and their go.sum):
#
#   bin/containerd, bin/ctr, bin/containerd-shim-runc-v2
#                       containerd (cri/containerd/go.mod: its own module,
#                       with containerd's own dependency versions)
#   bin/containerd-shim-runsc-v1
#                       gVisor's shim at the version the root go.mod pins,
#                       with patches/shim-oom-score.patch (test only, below)
#   bin/cni/            CNI plugins: bridge, host-local, loopback, bandwidth
#   bin/cri             a CRI client (cmd/cri): crictl is not to be had here
#   bin/sink            counts what a pod sends (runs in the test's namespace)
#   bin/image.tar       the offline image netqdisc.test/cri:v1 (docker-archive,
#                       for ctr images import): /pause (its entrypoint, the pod
#                       sandbox image too), /sender, /sink; static programs
#                       from cmd/
#
# and runsc/bin/runsc and runsc/bin/runsc-upstream with runsc/build.sh where
# they are missing. It is idempotent; when everything is built, a run costs
# a few seconds (go build's cache).
#
# patches/shim-oom-score.patch: the shim sets its own oom_score_adj to -999,
# which needs CAP_SYS_RESOURCE; root on the project's test machines lacks
# it, and the shim then refuses to start. The patched shim keeps
# containerd's score when the kernel says no. It is applied to a copy of
# the module in .build/shim, built in a scratch module that replaces
# gvisor.dev/gvisor with it: cri/go.mod, the module cache and runsc/patches
# are untouched.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
start=$SECONDS

version() { go mod edit -json | sed -n '/"Path": "gvisor.dev\/gvisor"/{n;s/.*"Version": "\(.*\)".*/\1/p;q}'; }
gvisor=$(version)
rootgvisor=$(cd .. && version)
if [ -z "$gvisor" ] || [ "$gvisor" != "$rootgvisor" ]; then
  echo "cri/go.mod pins gvisor.dev/gvisor $gvisor but go.mod pins $rootgvisor: pin the same version in both" >&2
  exit 1
fi

[ -x ../runsc/bin/runsc ] || ../runsc/build.sh
[ -x ../runsc/bin/runsc-upstream ] || ../runsc/build.sh --upstream

mkdir -p bin/cni .build/image .build/shim
export CGO_ENABLED=0
build() { go build -trimpath -ldflags "-s -w" "$@"; }

echo "building containerd, ctr, containerd-shim-runc-v2 ($(cd containerd && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2))"
(cd containerd && build -o ../bin/ \
  github.com/containerd/containerd/v2/cmd/containerd \
  github.com/containerd/containerd/v2/cmd/ctr \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2)

echo "building containerd-shim-runsc-v1 (gvisor.dev/gvisor $gvisor + patches/shim-oom-score.patch)"
src=$(go mod download -json "gvisor.dev/gvisor@$gvisor" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
file=pkg/shim/v1/manager.go
scratch=.build/shim
rm -rf "$scratch" && mkdir -p "$scratch"
# The module, linked (or copied) from the module cache; the patched file
# is a file of its own, so the cache stays as it is.
cp -rl "$src" "$scratch/gvisor" 2>/dev/null || { rm -rf "$scratch/gvisor"; cp -r "$src" "$scratch/gvisor"; }
find "$scratch/gvisor" -type d -exec chmod u+w {} +
rm "$scratch/gvisor/$file" && cp "$src/$file" "$scratch/gvisor/$file" && chmod u+w "$scratch/gvisor/$file"
# git apply outside this repository's work tree: a scratch repository.
mkdir -p "$scratch/apply/$(dirname "$file")" && cp "$src/$file" "$scratch/apply/$file" && chmod u+w "$scratch/apply/$file"
git -C "$scratch/apply" init -q
if ! git -C "$scratch/apply" apply "$here/patches/shim-oom-score.patch"; then
  echo "patches/shim-oom-score.patch does not apply to gvisor.dev/gvisor $gvisor's $file" >&2
  exit 1
fi
cp "$scratch/apply/$file" "$scratch/gvisor/$file"
# Built in a scratch module: this one's requirements, gVisor replaced by
# the patched copy (cri/go.mod itself stays free of replacements).
go mod edit -module=shimbuild -replace="gvisor.dev/gvisor=./gvisor" -print > "$scratch/go.mod"
cp go.sum "$scratch/go.sum"
(cd "$scratch" && build -o "$here/bin/containerd-shim-runsc-v1" gvisor.dev/gvisor/shim)

echo "building the CNI plugins ($(go list -m -f '{{.Version}}' github.com/containernetworking/plugins))"
build -o bin/cni/ \
  github.com/containernetworking/plugins/plugins/main/bridge \
  github.com/containernetworking/plugins/plugins/ipam/host-local \
  github.com/containernetworking/plugins/plugins/main/loopback \
  github.com/containernetworking/plugins/plugins/meta/bandwidth

echo "building cri, sink and the image netqdisc.test/cri:v1"
build -o bin/ ./cmd/cri ./cmd/sink ./cmd/mkimage
build -o .build/image/ ./cmd/pause ./cmd/sender ./cmd/sink
bin/mkimage -o bin/image.tar -tag netqdisc.test/cri:v1 -entrypoint /pause \
  .build/image/pause=/pause .build/image/sender=/sender .build/image/sink=/sink

echo "cri/bin: $(cd bin && echo * cni/*) ($((SECONDS - start)) s)"
