package runscflags

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite docs/flags.md's flag table from the table (TestFlagReference)")

// The markers around the flag table in docs/flags.md.
const (
	tableBegin = "<!-- flags:begin (go test ./runsc-flags -run TestFlagReference -update) -->\n"
	tableEnd   = "<!-- flags:end -->\n"
)

// TestFlagReference: the flag table in docs/flags.md is MarkdownTable's;
// with -update the test writes it there.
func TestFlagReference(t *testing.T) {
	const readme = "../docs/flags.md"
	b, err := os.ReadFile(readme)
	if os.IsNotExist(err) && os.Getenv("TEST_SRCDIR") != "" {
		t.Skipf("%s is not in Bazel's runfiles; go test checks it", readme)
	}
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	begin, end := strings.Index(text, tableBegin), strings.Index(text, tableEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s has no %q ... %q around its flag table", readme, tableBegin, tableEnd)
	}
	got, want := text[begin+len(tableBegin):end], MarkdownTable()
	if got == want {
		return
	}
	if *update {
		text = text[:begin+len(tableBegin)] + want + text[end:]
		if err := os.WriteFile(readme, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's flag table is not the table's; run go test ./runsc-flags -run TestFlagReference -update (-doc +table):\n%s", readme, cmp.Diff(got, want))
}

// TestMarkdownTable: a row a flag, each with as many cells as the header.
func TestMarkdownTable(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(MarkdownTable(), "\n"), "\n")
	if len(lines) != len(AllFlags())+2 {
		t.Fatalf("%d lines for %d flags", len(lines), len(AllFlags()))
	}
	cells := strings.Count(lines[0], "|")
	all := AllFlags()
	for i, l := range lines {
		if n := strings.Count(l, "|"); n != cells {
			t.Errorf("line %d %q has %d |s, the header %d", i, l, n, cells)
		}
		if i >= 2 && !strings.HasPrefix(l, "| `--"+all[i-2].Name+"` |") {
			t.Errorf("line %d %q is not --%s's", i, l, all[i-2].Name)
		}
	}
}
