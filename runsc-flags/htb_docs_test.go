package runscflags

import (
	"os"
	"regexp"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// TestClassesDocExamples: every htb script docs/classes.md shows parses and
// builds a valid tree.
func TestClassesDocExamples(t *testing.T) {
	const doc = "../docs/classes.md"
	b, err := os.ReadFile(doc)
	if os.IsNotExist(err) && os.Getenv("TEST_SRCDIR") != "" {
		t.Skipf("%s is not in Bazel's runfiles; go test checks it", doc)
	}
	if err != nil {
		t.Fatal(err)
	}
	var scripts []string
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile("(?s)`egress.htb`[^\n]*\n\n```text\n(.*?)```"),
		regexp.MustCompile(`"qdisc(?:-ingress)?-htb" = "([^"]*)"`),
		regexp.MustCompile(`"--qdisc-htb=([^"]*)"`),
	} {
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			scripts = append(scripts, m[1])
		}
	}
	if len(scripts) < 4 {
		t.Fatalf("found %d scripts in docs/classes.md, want the egress.htb file, Docker's and Kubernetes' two", len(scripts))
	}
	for _, s := range scripts {
		if _, err := htb.ParseScript(s); err != nil {
			t.Errorf("docs/classes.md's script %q: %v", s, err)
		}
	}
}
