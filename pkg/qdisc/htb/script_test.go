package htb

import (
	"strings"
	"testing"
)

// TestScriptComments: a tree file may carry comments, "#" to the end of
// its line, as an operator writes them (docs/node.md's example): they
// are left out, on a line of their own or after a statement.
func TestScriptComments(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		classes    int
		err        string
	}{
		{"after a statement", "class root classid 1:1 rate 10gbit   # the uplink\nclass parent 1:1 classid 1:10 rate 6gbit ceil 10gbit # tenant A", 2, ""},
		{"a line of its own", "# /run/netqdisc/node.htb\nclass root classid 1:1 rate 10gbit", 1, ""},
		{"a ';' in a comment", "class root classid 1:1 rate 10gbit # a; b", 1, ""},
		{"the rest of the line only", "class root classid 1:1 rate 10gbit # class parent 1:1 classid 1:2 rate 1gbit\nclass parent 1:1 classid 1:3 rate 1gbit", 2, ""},
		{"nothing but comments", "# none\n# at all", 0, "no class"},
	} {
		s, err := ParseScript(tc.text)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && len(s.Classes) != tc.classes:
			t.Errorf("%s: %d classes, want %d", tc.name, len(s.Classes), tc.classes)
		}
	}
}
