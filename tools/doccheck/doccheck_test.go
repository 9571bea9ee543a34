package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// TestDocs: every relative link, anchor and command that README.md and
// docs/*.md name exists.
func TestDocs(t *testing.T) {
	if _, err := os.Stat(filepath.Join(root, "README.md")); err != nil && os.Getenv("TEST_SRCDIR") != "" {
		t.Skip("the docs are not in Bazel's runfiles; go test checks them")
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, p := range pages {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, rel)
	}
	if len(files) < 2 {
		t.Fatalf("no docs/*.md under %s", root)
	}
	flags := make(map[string]bool)
	for _, f := range runscflags.AllFlags() {
		flags[f.Name] = true
	}
	// The flags every kind has, as the docs write them, those of the kind
	// docs/adding-a-qdisc.md walks (runsc-flags/kindproof's test registers
	// it), and runsc's carrier of them to the sandbox (runsc patch 0003).
	for _, name := range []string{"qdisc-KIND", "qdisc-ingress-KIND", "qdisc-bfifo", "qdisc-ingress-bfifo", "qdisc-flags"} {
		flags[name] = true
	}
	c := &Checker{Root: root, Flags: flags}
	for _, p := range c.Check(files) {
		t.Error(p)
	}
}

// A repository to check bad docs against.
var fakeRepo = map[string]string{
	"cmd/tool/main.go":      "package main\n\nvar compare = flag.Bool(\"compare\", false, \"\")\n",
	"cmd/tool/tool_test.go": "package main\n\nvar hidden = flag.Bool(\"hidden\", false, \"\")\n",
	"pkg/x/x.go":            "package x\n",
	"pkg/x/x_test.go":       "package x\n\nfunc TestFoo(t *testing.T) {}\n\nfunc BenchmarkBar(b *testing.B) {}\n",
	"pkg/x/y/y_test.go":     "package y\n\nfunc TestDeep(t *testing.T) {}\n",
	"lib/lib.go":            "package lib\n",
	"docs/a.md":             "# Page A\n\n## Some heading: `code`, and more\n\n## Twice\n\n## Twice\n",
	"docs/out.txt":          "output\n",
	"tools/run.sh":          "#!/bin/sh\n",
	"tools/noexec.sh":       "#!/bin/sh\n",
}

func makeRepo(t *testing.T) string {
	dir := t.TempDir()
	for name, text := range fakeRepo {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if name == "tools/run.sh" {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCheckerFindsWhatIsMissing: the checker on pages naming what exists
// and what does not; each bad page gives one problem that says what, on
// the right line, and each good page none.
func TestCheckerFindsWhatIsMissing(t *testing.T) {
	sh := func(lines ...string) string { return "text\n\n```sh\n" + strings.Join(lines, "\n") + "\n```\n" }
	for _, tc := range []struct {
		name string
		md   string // README.md of the fake repository
		want string // a problem that contains it; "" for none
		line int
	}{
		{name: "good links", md: "[a](docs/a.md) [h](docs/a.md#some-heading-code-and-more) [t](docs/a.md#twice-1) [self](#top) [d](pkg/x) ![i](docs/out.txt) [w](https://example.com/nope)\n\n# Top\n"},
		{name: "missing file", md: "one\n\nsee [b](docs/b.md)\n", want: "link docs/b.md: no such file", line: 3},
		{name: "missing anchor here", md: "# Top\n\n[x](#bottom)\n", want: "README.md has no heading whose anchor is #bottom", line: 3},
		{name: "missing anchor there", md: "[x](docs/a.md#some-heading)\n", want: "docs/a.md has no heading whose anchor is #some-heading", line: 1},
		{name: "third twice", md: "[x](docs/a.md#twice-2)\n", want: "no heading whose anchor is #twice-2", line: 1},
		{name: "anchor on a text file", md: "[x](docs/out.txt#l1)\n", want: "not Markdown", line: 1},
		{name: "outside the repository", md: "[x](../README.md)\n", want: "outside the repository", line: 1},
		{name: "link across lines", md: "a [link\nwrapped](docs/nope.md)\n", want: "link docs/nope.md", line: 1},
		{name: "links in code are not links", md: "`[x](nope.md)`\n\n```\n[y](nope.md)\n```\n"},
		{name: "good commands", md: sh(
			"go run ./cmd/tool --compare          # a comment with --qdisc-nope",
			"go test -race -timeout 30m ./...",
			"go test ./pkg/x/... -run TestDeep",
			"go test -run XXX -bench Bar ./pkg/x/",
			"sudo go test ./pkg/x -run 'TestFoo|TestNone' -v",
			"go run github.com/bazelbuild/bazel-gazelle/cmd/gazelle@v0.47.0 -mode=diff",
			"tools/run.sh 20 && cd pkg && ../tools/run.sh 2>&1 > /dev/null",
			"runsc qdisc change ID --qdisc-tbf-rate=10mbit \\",
			"    --qdisc-tbf-burst=12500",
			"docker run --annotation dev.gvisor.flag.qdisc-tbf-rate=20mbit img",
		)},
		{name: "go run of no package", md: sh("go run ./cmd/nope"), want: "go run ./cmd/nope: no such directory", line: 4},
		{name: "go run of a library", md: sh("go run ./lib"), want: "no main package", line: 4},
		{name: "go run flag not defined", md: sh("go run ./cmd/tool --compare --nope"), want: "defines no flag -nope", line: 4},
		{name: "go run flag only in a test", md: sh("go run ./cmd/tool --hidden"), want: "defines no flag -hidden", line: 4},
		{name: "go test of no package", md: sh("go test ./pkg/z/..."), want: "go test ./pkg/z/...: no such directory", line: 4},
		{name: "go test -run of no test", md: sh("go test ./pkg/x -run TestBar"), want: `-run "TestBar": no function matches`, line: 4},
		{name: "go test -run below, not recursive", md: sh("go test ./pkg/x -run TestDeep"), want: `-run "TestDeep"`, line: 4},
		{name: "go test -bench of no benchmark", md: sh("go test -bench Foo ./pkg/x"), want: `-bench "Foo"`, line: 4},
		{name: "go test bad pattern", md: sh("go test -run 'Test(' ./pkg/x"), want: "error parsing regexp", line: 4},
		{name: "missing script", md: sh("tools/missing.sh"), want: "tools/missing.sh: no such file", line: 4},
		{name: "script not executable", md: sh("echo && tools/noexec.sh"), want: "tools/noexec.sh: not executable", line: 4},
		{name: "unknown tool", md: sh("frobnicate --all"), want: "frobnicate: neither a file", line: 4},
		{name: "cd nowhere", md: sh("cd nowhere && ls"), want: "cd nowhere: no such directory", line: 4},
		{name: "unknown flag", md: sh("runsc qdisc change ID --qdisc-tbf-rat=1"), want: "--qdisc-tbf-rat is not a flag", line: 4},
		{name: "unknown annotation", md: sh("docker run --annotation dev.gvisor.flag.qdisc-tbf-rat=1 img"), want: "--qdisc-tbf-rat is not a flag", line: 4},
		{name: "continued line counts from its start", md: sh("echo", "runsc qdisc change ID \\", "  --qdisc-tbf-bust=1"), want: "--qdisc-tbf-bust", line: 5},
		{name: "inline go run", md: "run\n`go run ./cmd/nope`\n", want: "go run ./cmd/nope: no such directory", line: 2},
		{name: "inline script", md: "`tools/missing.sh 20`\n", want: "tools/missing.sh: no such file", line: 1},
		{name: "inline flag", md: "set `--qdisc-tbf-rate=1` and `--qdisc-bogus`\n", want: "--qdisc-bogus is not a flag", line: 1},
		{name: "inline globs are not flags", md: "`--qdisc-ingress-*` and `dev.gvisor.flag.qdisc*` and `dev.gvisor.flag.<name>`\n"},
		{name: "inline path", md: "see `docs/missing.txt`\n", want: "docs/missing.txt: no such file", line: 1},
		{name: "inline path glob", md: "see `pkg/x/*_test.go` and `pkg/q/*.go`\n", want: "pkg/q/*.go: no such file", line: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := makeRepo(t)
			if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(tc.md), 0o644); err != nil {
				t.Fatal(err)
			}
			c := &Checker{Root: dir, Flags: map[string]bool{"qdisc-tbf-rate": true, "qdisc-tbf-burst": true}}
			probs := c.Check([]string{"README.md"})
			if tc.want == "" {
				for _, p := range probs {
					t.Errorf("want no problem, got %s", p)
				}
				return
			}
			if len(probs) != 1 {
				t.Fatalf("want one problem with %q, got %d: %v", tc.want, len(probs), probs)
			}
			if p := probs[0]; !strings.Contains(p.Msg, tc.want) || p.Line != tc.line || p.File != "README.md" {
				t.Errorf("got %s, want README.md:%d: ...%s...", p, tc.line, tc.want)
			}
		})
	}
}

// TestUnreadable: a page that cannot be read is a problem, not a panic.
func TestUnreadable(t *testing.T) {
	c := &Checker{Root: t.TempDir()}
	if probs := c.Check([]string{"nope.md"}); len(probs) != 1 || probs[0].File != "nope.md" {
		t.Errorf("got %v, want one problem for nope.md", probs)
	}
}

// TestSlug: GitHub's anchors for this project's kinds of heading.
func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Results", "results"},
		{"Changing a running sandbox's shaping: `runsc qdisc`", "changing-a-running-sandboxs-shaping-runsc-qdisc"},
		{"The receive direction: netqdisc's ingress against Linux's ifb + tbf", "the-receive-direction-netqdiscs-ingress-against-linuxs-ifb--tbf"},
		{"Cost per packet, qdisc alone (lower link discards, 1500-byte packets)", "cost-per-packet-qdisc-alone-lower-link-discards-1500-byte-packets"},
		{"Kubernetes: containerd, gVisor's shim, CNI", "kubernetes-containerd-gvisors-shim-cni"},
		{"See [the guide](docs/x.md) – now", "see-the-guide--now"},
		{"snake_case and Ünïcode", "snake_case-and-ünïcode"},
	} {
		if got := Slug(tc.heading); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// TestWords: shell words as the checks see them.
func TestWords(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`go test -run 'A|B' ./x # comment`, `go|test|-run|A|B|./x`},
		{`a && b; c | d`, `a|&&|b|;|c|||d`},
		{`x 2>&1 >/dev/null "q r"`, `x|>&1|>|/dev/null|q r`},
		{`a\ b c#d`, `a b|c#d`},
		{`unclosed "quote`, `unclosed|quote`},
	} {
		var got []string
		for _, w := range words(tc.line) {
			got = append(got, w.s)
		}
		if g := strings.Join(got, "|"); g != tc.want {
			t.Errorf("words(%q) = %q, want %q", tc.line, g, tc.want)
		}
	}
}
