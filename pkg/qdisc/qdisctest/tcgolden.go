package qdisctest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TCStep is one command of a golden transcript of Linux's tc and what it
// printed: Args are tc's arguments ("qdisc show dev veth0"), Out its
// output, every line's trailing blanks dropped (tc ends many lines with
// one).
type TCStep struct {
	Args string
	Out  string
}

// ReadTCGolden reads a golden transcript: lines "$ tc ARGS" give a
// command, the lines after it (to the next command) its output, and
// lines starting with "#" before the first command are comments (how and
// where it was captured).
func ReadTCGolden(path string) ([]TCStep, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var steps []TCStep
	var out []string
	flush := func() {
		if len(steps) > 0 {
			steps[len(steps)-1].Out = strings.Join(out, "\n")
		}
		out = nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t")
		switch {
		case strings.HasPrefix(line, "$ tc "):
			flush()
			steps = append(steps, TCStep{Args: strings.TrimPrefix(line, "$ tc ")})
		case len(steps) == 0 && (strings.HasPrefix(line, "#") || line == ""):
		case len(steps) == 0:
			return nil, fmt.Errorf("%s: %q before the first \"$ tc\" command", path, line)
		default:
			out = append(out, line)
		}
	}
	flush()
	for i := range steps {
		steps[i].Out = strings.TrimRight(steps[i].Out, "\n")
	}
	return steps, sc.Err()
}

// refcnt is the part of tc's qdisc line that a netstack's qdisc has no
// counterpart of: where it hangs and its reference count.
var refcnt = regexp.MustCompile(` root refcnt \d+`)

// TCQdiscLine is tc's qdisc line without " root refcnt N", and its
// trailing blank dropped: "qdisc htb 1: r2q 10 ...", to compare with
// "qdisc " + a qdisc's String.
func TCQdiscLine(line string) string {
	return strings.TrimRight(refcnt.ReplaceAllString(line, ""), " ")
}

// RecaptureTC runs the transcript's commands with the machine's tc in a
// network namespace of its own, on veth0 of a veth pair (down, so that no
// packet moves its counters), and fails t where tc prints other than the
// transcript says: the golden strings still are what tc prints here. It
// skips, saying why, without root or without ip and tc. The devices live
// only in the namespace, which it deletes.
func RecaptureTC(t *testing.T, steps []TCStep) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("re-capturing tc's output needs root (a network namespace); the golden strings are checked without it")
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("re-capturing tc's output needs iproute2's %s: %v", tool, err)
		}
	}
	ns := fmt.Sprintf("netqdisc-tcgolden-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace: %v: %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	if out, err := exec.Command("ip", "-n", ns, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1").CombinedOutput(); err != nil {
		t.Skipf("cannot create a veth pair in the namespace: %v: %s", err, out)
	}
	for _, s := range steps {
		args := append([]string{"netns", "exec", ns, "tc"}, strings.Fields(s.Args)...)
		out, err := exec.Command("ip", args...).Output()
		if err != nil {
			t.Fatalf("tc %s: %v", s.Args, err)
		}
		var lines []string
		for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			lines = append(lines, strings.TrimRight(l, " \t"))
		}
		if got := strings.Join(lines, "\n"); got != s.Out {
			t.Errorf("tc %s printed\n%s\nthe golden transcript says\n%s", s.Args, got, s.Out)
		}
	}
}
