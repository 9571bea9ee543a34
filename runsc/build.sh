#!/usr/bin/env bash
# Builds a static runsc with netqdisc's qdiscs: gVisor's runsc at the version
# runsc/go.mod pins, from the Go module proxy, with the patches in
# runsc/patches applied (git am), linked against this checkout of netqdisc.
#
#   runsc/build.sh              -> runsc/bin/runsc
#   runsc/build.sh --upstream   -> runsc/bin/runsc-upstream (no patches: the control)
#   runsc/build.sh      -> the patches apply and the patched runsc
#                                  config tests pass (CI), then the build
#
# The patched gVisor tree is runsc/.build/gvisor, a git repository whose
# first commit is the pristine module and whose later commits are the
# patches: edit there, commit, and refresh the patches with
#   git -C runsc/.build/gvisor format-patch -o ../../patches --zero-commit --no-signature HEAD~N
# The binary must be static (CGO_ENABLED=0): the sandbox re-executes it
# inside an empty root where no dynamic loader exists.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
upstream=false
for a in "$@"; do
  case "$a" in
    --upstream) upstream=true ;;
    *) echo "usage: $0 [--upstream]" >&2; exit 2 ;;
  esac
done

version=$(go mod edit -json | sed -n '/"Path": "gvisor.dev\/gvisor"/{n;s/.*"Version": "\(.*\)".*/\1/p;q}')
rootversion=$(cd .. && go mod edit -json | sed -n '/"Path": "gvisor.dev\/gvisor"/{n;s/.*"Version": "\(.*\)".*/\1/p;q}')
if [ -z "$version" ] || [ "$version" != "$rootversion" ]; then
  echo "runsc/go.mod pins gvisor.dev/gvisor $version but go.mod pins $rootversion: pin the same version in both" >&2
  exit 1
fi
src=$(go mod download -json "gvisor.dev/gvisor@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
ldflags="-s -w -X gvisor.dev/gvisor/runsc/version.version=$version"
mkdir -p bin .build

if $upstream; then
  # The pristine module, built in a scratch module that requires it as is.
  scratch=.build/upstream
  rm -rf "$scratch" && mkdir -p "$scratch"
  go mod edit -dropreplace=gvisor.dev/gvisor -dropreplace=github.com/netqdisc/netqdisc \
    -droprequire=github.com/netqdisc/netqdisc -module=upstream -print > "$scratch/go.mod"
  cp go.sum "$scratch/go.sum"
  printf 'package upstream\n\nimport _ "gvisor.dev/gvisor/runsc/cli/maincli"\n' > "$scratch/deps.go"
  (cd "$scratch" && go mod tidy >/dev/null 2>&1 || true
   echo "building upstream runsc $version"
   CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$here/bin/runsc-upstream" gvisor.dev/gvisor/runsc)
  echo "runsc/bin/runsc-upstream"
  exit 0
fi

tree=.build/gvisor
rm -rf "$tree"
cp -r "$src" "$tree"
chmod -R u+w "$tree"
git() { command git -C "$tree" -c user.name=netqdisc -c user.email=netqdisc@localhost -c commit.gpgsign=false "$@"; }
git init -q
git add -A
git commit -qm "gvisor.dev/gvisor $version (module proxy)"
shopt -s nullglob
patches=(patches/*.patch)
if [ ${#patches[@]} -gt 0 ]; then
  if ! git am -q --3way "${patches[@]/#/$here/}"; then
    echo "the patches do not apply to gvisor.dev/gvisor $version; see README 'Moving to a newer gVisor'" >&2
    exit 1
  fi
fi
echo "gvisor.dev/gvisor $version + ${#patches[@]} patch(es): $(git log --format=%s -n ${#patches[@]} | tr '\n' ';')"

echo "building runsc"
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags-netqdisc" -o bin/runsc gvisor.dev/gvisor/runsc
echo "runsc/bin/runsc"
