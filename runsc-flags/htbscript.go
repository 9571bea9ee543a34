package runscflags

import (
	"errors"
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// script is an htb qdisc as --qdisc-htb and --qdisc-ingress-htb give it: tc's
// words, one statement after another, separated by ";" or newlines, as
// `tc -batch` takes them without the command and device:
//
//	qdisc default 20; class root classid 1:1 rate 1gbit;
//	class parent 1:1 classid 1:20 rate 10mbit quota 50gb per 24h;
//	filter dst 10.0.0.0/8 classid 1:10;
//	filter parent 1:10 dst 10.1.0.0/16 classid 1:11
//
// A "qdisc" statement (at most one, first) takes htb.ParseQdisc's words,
// a "class" statement htb.ParseClass's, a "filter" statement
// htb.ParseFilter's (classify.ParseRule's, and "parent 1:10" for a filter
// of that class's chain rather than the qdisc's root chain; with no match
// words, "filter parent 1:10 classid 1:11" takes every packet, as tc's
// matchall); "qdisc parent 1:20 fq_codel" grafts fq_codel (its knobs the
// --qdisc-fq-codel-* flags) on a leaf class in place of its pfifo, as `tc
// qdisc add dev eth0 parent 1:20 fq_codel` does.
type script struct {
	qdisc   htb.Config // Handle, Default, R2Q, DirectQLen
	classes []htb.ClassConfig
	filters []filter // in the order given
	// fqCoDel are the leaf classes fq_codel is grafted on, in order.
	fqCoDel []uint32
}

// filter is a filter statement: its rule and the class whose chain it
// joins (0: the qdisc's root chain).
type filter struct {
	parent uint32
	rule   classify.Rule
}

// String writes f in htb.ParseFilter's words.
func (f filter) String() string { return htb.FilterString(f.parent, f.rule) }

// statements splits text into its statements: each a keyword and the
// rest of its words.
func statements(text string) [][2]string {
	var out [][2]string
	for _, line := range strings.FieldsFunc(text, func(r rune) bool { return r == ';' || r == '\n' }) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		kw, rest, _ := strings.Cut(line, " ")
		out = append(out, [2]string{kw, strings.TrimSpace(rest)})
	}
	return out
}

// parseScript reads an htb script and checks it whole (htb.Config's
// Validate); an error names the statement.
func parseScript(text string) (script, error) {
	var s script
	for i, st := range statements(text) {
		switch st[0] {
		case "qdisc":
			if strings.HasPrefix(st[1], "parent ") {
				id, err := parseGraft(st[1])
				if err != nil {
					return script{}, fmt.Errorf("statement %d (qdisc %s): %w", i+1, st[1], err)
				}
				s.fqCoDel = append(s.fqCoDel, id)
				continue
			}
			if i != 0 {
				return script{}, fmt.Errorf("statement %d (qdisc %s): the qdisc statement comes first, once", i+1, st[1])
			}
			q, err := htb.ParseQdisc(st[1])
			if err != nil {
				return script{}, fmt.Errorf("statement %d (qdisc %s): %w", i+1, st[1], err)
			}
			s.qdisc = q
		case "class":
			c, err := htb.ParseClass(st[1])
			if err != nil {
				return script{}, fmt.Errorf("statement %d (class %s): %w", i+1, st[1], err)
			}
			s.classes = append(s.classes, c)
		case "filter":
			f, err := parseFilter(st[1])
			if err != nil {
				return script{}, fmt.Errorf("statement %d (filter %s): %w", i+1, st[1], err)
			}
			s.filters = append(s.filters, f)
		default:
			return script{}, fmt.Errorf("statement %d: %q: each statement starts with qdisc, class or filter", i+1, st[0])
		}
	}
	if len(s.classes) == 0 {
		return script{}, errors.New("no class: give at least one, such as class root classid 1:1 rate 10mbit")
	}
	if err := s.config(classify.Egress).Validate(); err != nil {
		return script{}, err
	}
	if err := s.checkGrafts(); err != nil {
		return script{}, err
	}
	return s, nil
}

// parseGraft reads the words of a leaf qdisc's statement, "parent 1:20
// fq_codel", and returns the class.
func parseGraft(text string) (uint32, error) {
	w := strings.Fields(text)
	if len(w) != 3 || w[0] != "parent" {
		return 0, errors.New("a leaf's qdisc is: qdisc parent 1:20 fq_codel")
	}
	if w[2] != "fq_codel" {
		return 0, fmt.Errorf("%q: a leaf takes fq_codel (its knobs are the --qdisc-fq-codel-* flags) or, left out, its pfifo", w[2])
	}
	r, err := classify.ParseRule("classid " + w[1])
	if err != nil {
		return 0, err
	}
	return r.Class, nil
}

// checkGrafts refuses a qdisc grafted on a class that is missing or has
// children, or twice on one class.
func (s script) checkGrafts() error {
	parents := map[uint32]bool{}
	for _, c := range s.classes {
		parents[c.Parent] = true
	}
	seen := map[uint32]bool{}
	for _, id := range s.fqCoDel {
		switch {
		case classIndex(s.classes, id) < 0:
			return fmt.Errorf("qdisc parent %s fq_codel: no class %s", classify.ClassID(id), classify.ClassID(id))
		case parents[id]:
			return fmt.Errorf("qdisc parent %s fq_codel: class %s has children; only a leaf takes a qdisc", classify.ClassID(id), classify.ClassID(id))
		case seen[id]:
			return fmt.Errorf("qdisc parent %s fq_codel: given twice", classify.ClassID(id))
		}
		seen[id] = true
	}
	return nil
}

// config returns the htb.Config of the script for packets travelling in
// direction dir.
func (s script) config(dir classify.Direction) htb.Config {
	c := s.qdisc
	c.Classes = append([]htb.ClassConfig(nil), s.classes...)
	c.Rules, c.Chains = nil, nil
	for _, f := range s.filters {
		if f.parent == 0 {
			c.Rules = append(c.Rules, f.rule)
			continue
		}
		if c.Chains == nil {
			c.Chains = map[uint32][]classify.Rule{}
		}
		c.Chains[f.parent] = append(c.Chains[f.parent], f.rule)
	}
	c.Direction = dir
	return c
}

// parseFilter reads a filter statement's words.
func parseFilter(text string) (filter, error) {
	parent, r, err := htb.ParseFilter(text)
	return filter{parent, r}, err
}

// chain returns the filters of the chain of class id (0: the root
// chain), in order.
func (s script) chain(id uint32) []filter {
	var out []filter
	for _, f := range s.filters {
		if f.parent == id {
			out = append(out, f)
		}
	}
	return out
}

// String writes the script back in its own words, one statement after
// another, separated by "; ": parseScript reads it back to the same
// script.
func (s script) String() string {
	var parts []string
	if q := qdiscWords(s.qdisc); q != "" {
		parts = append(parts, "qdisc "+q)
	}
	for _, c := range s.classes {
		parts = append(parts, "class "+c.String())
	}
	for _, id := range s.fqCoDel {
		parts = append(parts, "qdisc parent "+classify.ClassID(id)+" fq_codel")
	}
	for _, f := range s.filters {
		parts = append(parts, "filter "+f.String())
	}
	return strings.Join(parts, "; ")
}

// qdiscWords writes the qdisc's settings that are not the defaults in
// htb.ParseQdisc's words ("" when all are).
func qdiscWords(c htb.Config) string {
	var w []string
	if c.Handle != 0 && c.Handle != 1<<16 {
		w = append(w, fmt.Sprintf("handle %x:", c.Handle>>16))
	}
	if c.Default != 0 {
		w = append(w, fmt.Sprintf("default %x", c.Default&0xffff))
	}
	if c.R2Q != 0 && c.R2Q != htb.DefaultR2Q {
		w = append(w, fmt.Sprintf("r2q %d", c.R2Q))
	}
	if c.DirectQLen != 0 && c.DirectQLen != htb.DefaultDirectQLen {
		w = append(w, fmt.Sprintf("direct_qlen %d", c.DirectQLen))
	}
	return strings.Join(w, " ")
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
func (s script) parseUpdate(text string, ok updateRules) (script, classUpdate, error) {
	next := s
	next.classes = append([]htb.ClassConfig(nil), s.classes...)
	next.filters = append([]filter(nil), s.filters...)
	var u classUpdate
	for i, st := range statements(text) {
		switch st[0] {
		case "class":
			c, err := mergeClass(next.classes, st[1], ok.add)
			if err != nil {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (class %s): %w", i+1, st[1], err)
			}
			if j := classIndex(next.classes, c.ID); j >= 0 {
				next.classes[j] = c
			} else {
				next.classes = append(next.classes, c)
			}
			u.classes = append(u.classes, c)
		case "reset":
			if !ok.resets {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (reset %s): only the operator may reset a quota (runsc qdisc change)", i+1, st[1])
			}
			words := strings.Fields(st[1])
			if len(words) != 2 || words[0] != "classid" {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (reset %s): say reset classid 1:1", i+1, st[1])
			}
			r, err := classify.ParseRule("classid " + words[1])
			if err != nil {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (reset %s): %w", i+1, st[1], err)
			}
			j := classIndex(next.classes, r.Class)
			if j < 0 || next.classes[j].Quota == nil {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (reset %s): class %s has no quota", i+1, st[1], words[1])
			}
			u.resets = append(u.resets, r.Class)
		case "filter":
			if !ok.filters {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (filter %s): the filters' words place packets in the tree, and a running tree's stay as they are: change classes (class classid 1:10 rate 20mbit)", i+1, st[1])
			}
			f, err := parseFilter(st[1])
			if err != nil {
				return script{}, classUpdate{}, fmt.Errorf("statement %d (filter %s): %w", i+1, st[1], err)
			}
			next.filters = append(next.filters, f)
			u.filters = append(u.filters, f)
		case "qdisc":
			return script{}, classUpdate{}, fmt.Errorf("statement %d (qdisc %s): the qdisc's words decide where packets no filter places go, and stay as they are: change classes (class classid 1:10 rate 20mbit)", i+1, st[1])
		default:
			return script{}, classUpdate{}, fmt.Errorf("statement %d: %q: a change is class (or reset) statements", i+1, st[0])
		}
	}
	if len(u.classes) == 0 && len(u.filters) == 0 && len(u.resets) == 0 {
		return script{}, classUpdate{}, errors.New("no change: give class statements such as class classid 1:10 ceil 5mbit")
	}
	if err := next.config(classify.Egress).Validate(); err != nil {
		return script{}, classUpdate{}, err
	}
	if err := next.checkGrafts(); err != nil {
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
