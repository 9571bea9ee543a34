#!/usr/bin/env bash
# Builds a static runsc with netqdisc's qdiscs: gVisor's runsc at the version
# runsc/go.mod pins, from the Go module proxy, with the patches in
# runsc/patches applied (git am), linked against this checkout of netqdisc.
#
#   runsc/build.sh              -> runsc/bin/runsc
#   runsc/build.sh --upstream   -> runsc/bin/runsc-upstream (no patches: the control)
#   (runsc/build.sh also makes runsc/bin/runsc-notsq: runsc without patch
#   0006, TCP small queues, the control of the backpressure tests)
#
# build.sh checks the patches as a series a reviewer takes one by one: they
# apply in order (git am), and at each patch's commit runsc builds, its
# config package passes go vet, and runsc's config tests pass. Then it
# builds the binary from the last commit (CI runs it).
#
# The patched gVisor tree is runsc/.build/gvisor, a git repository whose
# first commit is the pristine module and whose later commits are the
# patches, one each: edit there, commit (git commit --fixup and
# git rebase -i --autosquash to change an earlier patch), delete the patch
# files you replace, and refresh them with
#   git -C runsc/.build/gvisor format-patch -o ../../patches --zero-commit --no-signature HEAD~N
# build.sh recreates runsc/.build/gvisor: write the patches out first.
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
    echo "the patches do not apply to gvisor.dev/gvisor $version; see docs/upgrading-gvisor.md" >&2
    exit 1
  fi
fi
echo "gvisor.dev/gvisor $version + ${#patches[@]} patch(es): $(git log --format=%s -n ${#patches[@]} | tr '\n' ';')"

# Each patch must build on its own, in order: runsc's packages build, its
# config package passes go vet and its tests. The builds share the Go build
# cache with each other and with the binary's (same flags), so each after
# the first compiles only what its patch changed; the last patch's is the
# binary's, below. (Vetting boot, sandbox and specutils as well would cost
# minutes on a cold cache: vet analyzes the whole sentry they import.)
if [ ${#patches[@]} -gt 0 ]; then
  branch=$(git symbolic-ref --short HEAD)
  i=0
  for commit in $(git rev-list --reverse "HEAD~${#patches[@]}..HEAD"); do
    i=$((i + 1))
    git checkout -q "$commit"
    echo "patch $i/${#patches[@]}: $(git log --format=%s -n 1)"
    if ! { { [ "$i" -eq ${#patches[@]} ] || CGO_ENABLED=0 go build -trimpath gvisor.dev/gvisor/runsc/...; } &&
        CGO_ENABLED=0 go vet gvisor.dev/gvisor/runsc/config; }; then
      echo "patch $i (${patches[$((i - 1))]}) does not build or vet on its own" >&2
      exit 1
    fi
    if compgen -G "$tree/runsc/config/*_test.go" >/dev/null &&
      ! out=$(CGO_ENABLED=0 go test -trimpath -count=1 gvisor.dev/gvisor/runsc/config 2>&1); then
      grep -v '^I[0-9]' <<<"$out" >&2
      echo "patch $i (${patches[$((i - 1))]}): runsc's config tests fail" >&2
      exit 1
    fi
  done
  git checkout -q "$branch"
fi

echo "building runsc"
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags-netqdisc" -o bin/runsc gvisor.dev/gvisor/runsc
echo "runsc/bin/runsc"

# runsc-notsq is the same runsc without patch 0006 (TCP small queues): the
# control of the tests that measure what the patch changes (TestRunscRRUL).
# go build -overlay puts each file that patch touched back as it was before
# it (a file it added, removed), so only those packages and what imports
# them compile again.
notsq=$(git log --format=%H --grep='^tcp: small queues' -n 1)
if [ -n "$notsq" ]; then
  overlay=.build/notsq
  rm -rf "$overlay" && mkdir -p "$overlay/files"
  abs=$(cd "$tree" && pwd) files=$(cd "$overlay/files" && pwd)
  {
    printf '{"Replace":{'
    sep=""
    while read -r status path; do
      case "$status" in
        M) mkdir -p "$files/$(dirname "$path")"
           git show "$notsq~1:$path" >"$files/$path"
           printf '%s"%s":"%s"' "$sep" "$abs/$path" "$files/$path" ;;
        A) printf '%s"%s":""' "$sep" "$abs/$path" ;;
        *) echo "patch 0006 $status $path: the overlay reverts only modified and added files" >&2; exit 1 ;;
      esac
      sep=","
    done < <(git diff --name-status "$notsq~1" "$notsq")
    printf '}}\n'
  } >"$overlay/overlay.json"
  CGO_ENABLED=0 go build -trimpath -overlay "$overlay/overlay.json" -ldflags "$ldflags-netqdisc-notsq" -o bin/runsc-notsq gvisor.dev/gvisor/runsc
  echo "runsc/bin/runsc-notsq"
fi

# Patch 0006 (TCP small queues) in process: this module's netstacks are
# the patched tree's, so the benchmark harness run here shapes its TCP.
echo "testing the patched TCP in process (runsc/smallqueues)"
go test -count=1 ./smallqueues/
