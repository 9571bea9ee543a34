// Package doccheck checks that what the project's Markdown names exists:
// every relative link (a file, and a #anchor within a .md page), and every
// command a reader is told to run, in a fenced sh block or an inline code
// span: a `go run ./pkg` names a main package, a `go test ./pkg/...` a
// directory (and its -run or -bench pattern a test there), a script such
// as runsc/build.sh an executable file, and a --qdisc* flag a flag in
// runsc-flags' table. Docs are read by newcomers who copy what they see;
// a moved file or a renamed flag must fail a test, not a reader.
//
// It is a checker, not a Markdown renderer: it knows fenced blocks, ATX
// headings (with GitHub's anchors), inline code spans and inline links,
// which is what this project's docs use.
package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Checker checks Markdown files of one repository.
type Checker struct {
	// Root is the repository's root: links may not leave it, and commands
	// run from it.
	Root string
	// Flags are the runsc flags (runscflags' table), without dashes.
	Flags map[string]bool
	// Tools are the commands a doc may name that are not files of the
	// repository (git, runsc, docker, ...); nil means DefaultTools.
	Tools map[string]bool

	pages map[string]*page // parsed .md files, by path relative to Root
}

// DefaultTools are the commands outside the repository the docs may name.
var DefaultTools = map[string]bool{
	"apt-get": true, "bazel": true, "benchstat": true, "cat": true, "containerd": true,
	"crictl": true, "curl": true, "docker": true, "dockerd": true, "echo": true,
	"ethtool": true, "git": true, "gofmt": true, "install": true, "ip": true,
	"iperf": true, "iperf3": true, "kubectl": true, "ls": true, "mount": true,
	"ping": true, "runsc": true, "systemctl": true, "tc": true, "umount": true,
}

// Problem is one thing a page names that does not exist.
type Problem struct {
	File string // relative to Root
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// Check checks files (paths relative to Root) and returns the problems
// found, in file and line order. An unreadable file is a problem too.
func (c *Checker) Check(files []string) []Problem {
	var probs []Problem
	for _, f := range files {
		p, err := c.page(f)
		if err != nil {
			probs = append(probs, Problem{File: f, Msg: err.Error()})
			continue
		}
		probs = append(probs, c.checkLinks(p)...)
		probs = append(probs, c.checkCommands(p)...)
	}
	sort.SliceStable(probs, func(i, j int) bool {
		if probs[i].File != probs[j].File {
			return probs[i].File < probs[j].File
		}
		return probs[i].Line < probs[j].Line
	})
	return probs
}

// page returns the parsed page at rel (relative to Root), reading it once.
func (c *Checker) page(rel string) (*page, error) {
	rel = filepath.Clean(rel)
	if p, ok := c.pages[rel]; ok {
		return p, nil
	}
	b, err := os.ReadFile(filepath.Join(c.Root, rel))
	if err != nil {
		return nil, err
	}
	if c.pages == nil {
		c.pages = make(map[string]*page)
	}
	p := parse(rel, string(b))
	c.pages[rel] = p
	return p, nil
}

// tools returns the commands allowed outside the repository.
func (c *Checker) tools() map[string]bool {
	if c.Tools != nil {
		return c.Tools
	}
	return DefaultTools
}
