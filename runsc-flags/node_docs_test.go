package runscflags

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNodeDocExamples: docs/node.md's tree file, its comments and all,
// and its runsc command's flags work as a reader copies them: the tree
// parses, the flags validate, and a sandbox joins the node with them
// (its paths put in a temporary directory).
func TestNodeDocExamples(t *testing.T) {
	const doc = "../docs/node.md"
	b, err := os.ReadFile(doc)
	if os.IsNotExist(err) && os.Getenv("TEST_SRCDIR") != "" {
		t.Skipf("%s is not in Bazel's runfiles; go test checks it", doc)
	}
	if err != nil {
		t.Fatal(err)
	}
	tree := regexp.MustCompile("(?s)```text\n(# /run/netqdisc/node.htb\n.*?)```").FindStringSubmatch(string(b))
	cmd := regexp.MustCompile("(?s)```sh\n(runsc --network=sandbox --qdisc-node=.*?)```").FindStringSubmatch(string(b))
	if tree == nil || cmd == nil {
		t.Fatalf("docs/node.md has no tree file (a text block starting # /run/netqdisc/node.htb) or no runsc command with --qdisc-node")
	}
	dir := t.TempDir()
	for _, name := range []string{"node.htb", "node-in.htb"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(tree[1]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var args []string
	for _, w := range strings.Fields(strings.ReplaceAll(cmd[1], "\\\n", " ")) {
		if strings.HasPrefix(w, "--qdisc") {
			args = append(args, strings.ReplaceAll(w, "/run/netqdisc", dir))
		}
	}
	if len(args) < 4 {
		t.Fatalf("docs/node.md's runsc command has %d --qdisc flags: %q", len(args), args)
	}
	c, err := parse(t, args...)
	if err != nil {
		t.Fatalf("docs/node.md's flags %q: %v", args, err)
	}
	seats, files, err := c.JoinNode(os.Getpid())
	if err != nil {
		t.Fatalf("docs/node.md's sandbox does not join its node: %v", err)
	}
	if len(seats) != 2 {
		t.Errorf("docs/node.md's sandbox joined %d directions, want both", len(seats))
	}
	for i, f := range files {
		nc, err := AttachNode(seats[i], f)
		if err != nil {
			t.Fatal(err)
		}
		if got := nc.String(); !strings.Contains(got, "parent 1:10 rate 100Mbit") {
			t.Errorf("docs/node.md's sandbox joined as %q, want a class under 1:10 guaranteed 100Mbit", got)
		}
		nc.Close()
	}
}
