#!/usr/bin/env bash
# tools/bazel/setup.sh: make `bazel test //...` work on a machine that reaches
# only the package registries (Debian's and the Go module proxy), not GitHub
# or Bazel's mirrors. Run it once; then `bazel test //...`. With "test" as
# its argument it runs that too.
#
# What it does, and why:
#   1. Installs Debian's bazel-bootstrap (Bazel 4.2.3, the only Bazel on
#      offer), bazel-skylib and bazel-platforms, if missing.
#   2. Takes rules_go v0.34.0 (the newest that accepts Bazel 4.2) and gazelle
#      v0.26.0 from the Go module proxy into a cache directory.
#   3. Patches rules_go for Go 1.26 (patches/rules_go-v0.34.0-go1.26.patch):
#      Go >= 1.20 ships no precompiled standard library, so the builder tool
#      is built with "go build" and std is always built, with
#      GODEBUG=installgoroot=all; Go 1.26 has no "pack" tool, so archive
#      members are written directly; "asm -gensymabis" is given the package
#      path, without which links fail with "relocation target ... not defined
#      for ABIInternal".
#   4. Vendors gazelle's dependencies (its module zip lacks vendor/, which
#      go_repository's tool bootstrap expects).
#   5. Uses local stand-ins (standins/) for rules_cc, rules_java, rules_proto
#      and remote_coverage_tools, which Bazel's own @bazel_tools would fetch
#      from GitHub, and Debian's skylib and platforms.
#   6. Writes .bazelrc.offline (read by the checked-in .bazelrc) with
#      --override_repository for each of these and GOPROXY/GOSUMDB as
#      --repo_env (the host SDK has no go.env), so WORKSPACE itself stays as
#      a user with network would write it.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cache=${NETQDISC_BAZEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/netqdisc-bazel}
export PATH="$PATH:/usr/local/go/bin"
export GOTOOLCHAIN=local

say() { printf 'tools/bazel/setup.sh: %s\n' "$*"; }

if ! command -v bazel >/dev/null 2>&1 || [ ! -d /usr/share/bazel/tools/skylib ] || [ ! -d /usr/share/bazel/tools/platforms ]; then
  say "installing bazel-bootstrap, bazel-skylib, bazel-platforms"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bazel-bootstrap bazel-skylib bazel-platforms >/dev/null
fi

moddir() { # module@version -> its directory in the module cache
  (cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}

repos="$cache/repos"
rm -rf "$repos"
mkdir -p "$repos"
say "rules_go v0.34.0 and gazelle v0.26.0 from the Go module proxy into $repos"
cp -r "$(moddir github.com/bazelbuild/rules_go@v0.34.0)" "$repos/rules_go"
cp -r "$(moddir github.com/bazelbuild/bazel-gazelle@v0.26.0)" "$repos/gazelle"
chmod -R u+w "$repos"
patch -s -d "$repos/rules_go" -p1 < "$top/tools/bazel/patches/rules_go-v0.34.0-go1.26.patch"
(cd "$repos/gazelle" && GOFLAGS=-mod=mod go mod vendor)
cp -r "$top/tools/bazel/standins/." "$repos/"
ln -s /usr/share/bazel/tools/skylib "$repos/bazel_skylib"
ln -s /usr/share/bazel/tools/platforms "$repos/platforms"

{
  echo "# Written by tools/bazel/setup.sh: the offline repositories."
  for r in io_bazel_rules_go=rules_go bazel_gazelle=gazelle rules_cc=rules_cc rules_java=rules_java \
           rules_proto=rules_proto remote_coverage_tools=remote_coverage_tools \
           bazel_skylib=bazel_skylib platforms=platforms; do
    echo "build --override_repository=${r%%=*}=$repos/${r##*=}"
  done
  echo "build --repo_env=GOPROXY=$(go env GOPROXY)"
  echo "build --repo_env=GOSUMDB=$(go env GOSUMDB)"
  echo "build --repo_env=GOTOOLCHAIN=local"
} > "$top/.bazelrc.offline"
say "wrote $top/.bazelrc.offline"

if [ "${1:-}" = test ]; then
  cd "$top"
  bazel --batch test //...
fi
