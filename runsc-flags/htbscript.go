package runscflags

import (
	"errors"
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// An htb script's words, as --qdisc-htb and --qdisc-ingress-htb give them,
// are htb.Script's (htb.ParseScript reads them, String writes them back);
// this file reads the updates of one that annotations and `runsc qdisc
// change` make, under what each may change (updateRules).

// script and filter are htb's, by their short names here.
type (
	script = htb.Script
	filter = htb.Filter
)

// scriptOptions returns the Flag.options of htb's script flag name,
// whose field text returns: the script it holds, as htb's Kind takes it
// (htb.Script).
func scriptOptions(name string, text func(c *Config) string) func(c *Config) (qdisc.Options, error) {
	return func(c *Config) (qdisc.Options, error) {
		s, err := htb.ParseScript(text(c))
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", name, err)
		}
		return s, nil
	}
}

// classUpdate is a change to a running tree's classes, or to an operator's
// tree by an annotation: "class classid 1:20 ceil 5mbit" statements that
// give a class's new settings (the rest as they were; "noquota" removes
// its quota), for an annotation new classes and "filter" statements
// added to the filters, and, for the operator only, "reset classid 1:1"
// statements that renew a quota's budget now.
type classUpdate struct {
	classes []htb.ClassConfig // whole, the settings merged
	filters []filter          // added, after the tree's own
	resets  []uint32
}

// updateRules says what an update may hold beyond changes to existing
// classes.
type updateRules struct {
	// add lets it add classes (an annotation: the policy then checks
	// them; not a running tree, whose classes are built).
	add bool
	// filters lets it add filter statements, after the tree's own
	// (an annotation, likewise).
	filters bool
	// resets lets it reset quotas (the operator's runsc qdisc change).
	resets bool
}

// parseUpdate reads an update of the tree in s, as ok allows.
func parseUpdate(s script, text string, ok updateRules) (script, classUpdate, error) {
	next := s
	next.Classes = append([]htb.ClassConfig(nil), s.Classes...)
	next.Filters = append([]filter(nil), s.Filters...)
	var u classUpdate
	for i, st := range htb.Statements(text) {
		switch st.Keyword {
		case "class":
			c, err := mergeClass(next.Classes, st.Words, ok.add)
			if err != nil {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (class %s): %w", i+1, st.Words, err)
			}
			if j := classIndex(next.Classes, c.ID); j >= 0 {
				next.Classes[j] = c
			} else {
				next.Classes = append(next.Classes, c)
			}
			u.classes = append(u.classes, c)
		case "reset":
			if !ok.resets {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (reset %s): only the operator may reset a quota (runsc qdisc change)", i+1, st.Words)
			}
			words := strings.Fields(st.Words)
			if len(words) != 2 || words[0] != "classid" {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (reset %s): say reset classid 1:1", i+1, st.Words)
			}
			r, err := classify.ParseRule("classid " + words[1])
			if err != nil {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (reset %s): %w", i+1, st.Words, err)
			}
			j := classIndex(next.Classes, r.Class)
			if j < 0 || next.Classes[j].Quota == nil {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (reset %s): class %s has no quota", i+1, st.Words, words[1])
			}
			u.resets = append(u.resets, r.Class)
		case "filter":
			if !ok.filters {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (filter %s): the filters' words place packets in the tree, and a running tree's stay as they are: change classes (class classid 1:10 rate 20mbit)", i+1, st.Words)
			}
			parent, r, err := htb.ParseFilter(st.Words)
			if err != nil {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (filter %s): %w", i+1, st.Words, err)
			}
			f := filter{Parent: parent, Rule: r}
			next.Filters = append(next.Filters, f)
			u.filters = append(u.filters, f)
		case "qdisc":
			if strings.HasPrefix(st.Words, "parent ") {
				// Refused unread: a pod's words for a leaf's qdisc
				// (netem's) are never parsed, and open no file.
				return script{}, classUpdate{}, fmt.Errorf("statement %d (qdisc %s): a leaf's qdisc (qdisc parent 1:20 netem ...) is the operator's, in --qdisc-htb: a change or a pod's annotation gives class and filter statements", i+1, st.Words)
			}
			return script{}, classUpdate{}, fmt.Errorf("statement %d (qdisc %s): the qdisc's words decide where packets no filter places go, and stay as they are: change classes (class classid 1:10 rate 20mbit)", i+1, st.Words)
		default:
			return script{}, classUpdate{}, fmt.Errorf("statement %d: %q: a change is class (or reset) statements", i+1, st.Keyword)
		}
	}
	if len(u.classes) == 0 && len(u.filters) == 0 && len(u.resets) == 0 {
		return script{}, classUpdate{}, errors.New("no change: give class statements such as class classid 1:10 ceil 5mbit")
	}
	if err := next.Validate(); err != nil {
		return script{}, classUpdate{}, err
	}
	return next, u, nil
}

// classIndex returns where class id is in classes, or -1.
func classIndex(classes []htb.ClassConfig, id uint32) int {
	for i, c := range classes {
		if c.ID == id {
			return i
		}
	}
	return -1
}

// mergeClass reads a class statement of an update: the words given
// replace the class's own (its parent may be given, and must be the one
// it has); a class not in classes is new, if add allows.
func mergeClass(classes []htb.ClassConfig, text string, add bool) (htb.ClassConfig, error) {
	words := strings.Fields(text)
	given := map[string]string{}
	noQuota := false
	for i := 0; i < len(words); i++ {
		switch w := words[i]; w {
		case "htb":
		case "root":
			given["parent"] = "root"
		case "noquota":
			noQuota = true
		default:
			if i+1 == len(words) {
				return htb.ClassConfig{}, fmt.Errorf("%q needs a value", w)
			}
			given[w] = words[i+1]
			i++
		}
	}
	idText, ok := given["classid"]
	if !ok {
		return htb.ClassConfig{}, errors.New("no classid: name the class to change, such as classid 1:10")
	}
	r, err := classify.ParseRule("classid " + idText)
	if err != nil {
		return htb.ClassConfig{}, err
	}
	j := classIndex(classes, r.Class)
	if j < 0 {
		if !add {
			return htb.ClassConfig{}, fmt.Errorf("no class %s to change; adding a class here %s", idText, requiresOverride)
		}
		if _, ok := given["parent"]; !ok {
			return htb.ClassConfig{}, fmt.Errorf("no class %s in the tree to change; to add one, give the class it hangs from (class parent 1:20 classid %s rate 1mbit)", idText, idText)
		}
		return htb.ParseClass(text)
	}
	// The class's own words, then the given ones over them.
	own := map[string]string{}
	var order []string
	cur := strings.Fields(classes[j].String())
	for i := 0; i < len(cur); i++ {
		switch w := cur[i]; w {
		case "htb":
		case "root":
			own["parent"] = "root"
			order = append(order, "parent")
		default:
			own[w] = cur[i+1]
			order = append(order, w)
			i++
		}
	}
	if p, ok := given["parent"]; ok && p != own["parent"] && !(p == "root" && strings.HasSuffix(own["parent"], ":")) {
		return htb.ClassConfig{}, fmt.Errorf("parent %s: a change keeps a class where it is (under %s)", p, own["parent"])
	}
	if noQuota {
		delete(own, "quota")
		delete(own, "per")
		delete(own, "then")
	}
	for k, v := range given {
		if _, ok := own[k]; !ok {
			order = append(order, k)
		}
		own[k] = v
	}
	var b strings.Builder
	seen := map[string]bool{}
	for _, k := range order {
		v, ok := own[k]
		if !ok || seen[k] {
			continue
		}
		seen[k] = true
		if k == "parent" && v == "root" {
			b.WriteString("root ")
			continue
		}
		fmt.Fprintf(&b, "%s %s ", k, v)
	}
	return htb.ParseClass(b.String())
}
