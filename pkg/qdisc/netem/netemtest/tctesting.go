package netemtest

import (
	_ "embed" // the cases
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// TCCase is one of Linux's tc-testing cases for netem
// (tools/testing/selftests/tc-testing/tc-tests/qdiscs/netem.json), as
// tests here run it: tc qdisc COMMAND ... netem WORDS on a device, after
// netem SETUP was added if the case adds one first, and the case's
// pattern counted in `tc qdisc show` (or `tc class show`) after it.
type TCCase struct {
	ID, Name string
	// Setup is the netem words a setup command added first ("" with
	// HasSetup false: none).
	Setup    string
	HasSetup bool
	// Command is what the case does: "add", "change", "replace" (netem
	// in place: netem_change) or "del".
	Command string
	Words   string
	// Verify is what is shown: "qdisc", "class" or "stats" (tc -s).
	Verify string
	// Match is the case's pattern, Count how many times tc's output
	// holds it.
	Match string
	Count int
	// Tree is the netems a case builds first under the device's root
	// (netem's words each), for a case of a tree of qdiscs.
	Tree []string
	// Refused says why netqdisc cannot do what the case does, where Linux
	// can ("" where it can).
	Refused string
}

//go:embed testdata/tctesting.json
var tcCasesJSON []byte

// TCCases returns the cases, as testdata/tctesting.json writes them
// down from Linux's file.
func TCCases() ([]TCCase, error) {
	var f struct {
		Cases []struct {
			ID, Name, Command, Words, Verify, Match, Refused string
			Setup                                            *string
			Count                                            int
			Tree                                             []string
		}
	}
	if err := json.Unmarshal(tcCasesJSON, &f); err != nil {
		return nil, fmt.Errorf("tctesting.json: %v", err)
	}
	var cases []TCCase
	for _, c := range f.Cases {
		tc := TCCase{ID: c.ID, Name: c.Name, Command: c.Command, Words: c.Words, Verify: c.Verify, Match: c.Match, Count: c.Count, Tree: c.Tree, Refused: c.Refused}
		if c.Setup != nil {
			tc.Setup, tc.HasSetup = *c.Setup, true
		}
		if _, err := regexp.Compile(tc.Match); err != nil {
			return nil, fmt.Errorf("tctesting.json, case %s: %v", c.ID, err)
		}
		cases = append(cases, tc)
	}
	return cases, nil
}

// Matches returns how many times the case's pattern, written for
// `tc qdisc show dev X` of a netem whose handle is 1:, matches out, in
// which a qdisc's (or class's) handle is any and the device named dev is
// shown after it, as a runtime shows it: "qdisc netem 8001: dev eth0 root".
// dev "" matches out as tc prints it when asked about one device.
func (c TCCase) Matches(out, dev string) int {
	pattern := c.Match
	if dev != "" {
		for _, kind := range []string{"qdisc netem", "class netem"} {
			pattern = strings.Replace(pattern, kind+" 1: root", kind+" [0-9a-f]+: dev "+regexp.QuoteMeta(dev)+" root", 1)
			pattern = strings.Replace(pattern, kind+" 1:", kind+" [0-9a-f]+:", 1)
		}
	}
	return len(regexp.MustCompile(pattern).FindAllStringIndex(out, -1))
}
