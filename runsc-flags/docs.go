package runscflags

import (
	"fmt"
	"strconv"
	"strings"
)

// MarkdownTable returns the flags table as Markdown, one row a flag, as
// docs/flags.md shows it.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| flag | unit | default | what an annotation may do (without `--allow-flag-override`) | Linux |\n")
	b.WriteString("|---|---|---|---|---|\n")
	all := AllFlags()
	for i := range all {
		f := &all[i]
		fmt.Fprintf(&b, "| `--%s` | %s | %s | %s | %s |\n", f.Name, f.unitDoc(), f.defaultDoc(), f.Annotation.doc(f), f.Linux.doc(f))
	}
	return b.String()
}

// unitDoc says what the flag's value is.
func (f *Flag) unitDoc() string {
	switch f.Kind {
	case KindQDisc:
		return codeList(qdiscChoices(), ", ")
	case KindName:
		return "a qdisc's name (`" + f.Example + "`)"
	case KindText:
		return "`" + f.Example + "`"
	case KindWords:
		return f.words.Name + "'s words (`" + f.Example + "`)"
	case KindAliasWords:
		return "tc-" + f.alias.kind + "'s words (`" + f.Example + "`)"
	case KindChild:
		return codeList(childKinds(), ", ")
	case KindLinkLayer:
		return "`ethernet`, `atm` (`adsl`)"
	case KindRate:
		return "bytes/s, or tc units (`10mbit`)"
	case KindSize:
		return "bytes, or tc units (`64kb`)"
	case KindCount:
		return f.Unit
	case KindDuration:
		return "duration (`" + f.Example + "`)"
	case KindPacketRate:
		return "packets/s (`20000`, `20kpps`)"
	case KindHTB:
		return "tc's words, `;` between statements (`" + f.Example + "`)"
	case KindCake:
		return "tc-cake's words (`" + f.Example + "`)"
	case KindCakeKnob:
		return "tc-cake's (`" + f.Example + "`)"
	}
	return "bool"
}

// defaultDoc says what the flag's default is.
func (f *Flag) defaultDoc() string {
	if f.Unset != "" {
		return f.Unset
	}
	return "`" + f.Default + "`"
}

// doc says what the rule lets an annotation do.
func (r Rule) doc(f *Flag) string {
	if f.alias != nil {
		return "each word as its own flag allows: " + codeList(f.alias.knobs, " and ")
	}
	var s string
	switch r.Permit {
	case Never:
		s = "never"
	case OperatorOnly:
		s = "nothing: it bounds nothing, so it is the operator's"
	case Select:
		var ch []string
		for _, c := range r.Choices {
			if len(c.Over) == 0 {
				ch = append(ch, "`"+c.Value+"`")
			} else {
				ch = append(ch, "`"+c.Value+"` only in place of "+codeList(c.Over, " or "))
			}
		}
		s = "select " + strings.Join(ch, "; ")
	case Tighten:
		s = "tighten it: every packet's classes no less strict"
		if f.Kind == KindCake || f.Kind == KindCakeKnob {
			s = "tighten it: cake no looser than the operator's"
		}
		if f.words != nil {
			s = "tighten it: " + f.words.Name + " no looser than the operator's"
		}
	case Raise:
		s = "raise it: the operator's value is the floor (a packet charged more is shaped tighter)"
	case Lower:
		s = "lower it, not to 0: the ceiling is the operator's value or, if unset, "
		switch r.Unset {
		case DefaultCeiling:
			s += "Linux's default"
		case DefaultQueue:
			s += "the default queue, 1000 full-size packets (" + strconv.Itoa(DefaultQueueBytes) + " bytes; a latency's limit, rate*latency + burst, no larger)"
		default:
			s += "none"
		}
	}
	if r.Note != "" {
		s += "; " + r.Note
	}
	return s
}

// doc names the Linux setting and its bound.
func (l Linux) doc(f *Flag) string {
	if l.Qdisc == "" {
		return "—"
	}
	s := l.Qdisc
	if l.Param != "" {
		s = "`" + l.Qdisc + " " + l.Param + "`"
	}
	switch {
	case l.Max != 0:
		s += ", at most " + f.show(l.Max) + " (" + l.Bound + ")"
	case l.Bound != "":
		s += " (" + l.Bound + ")"
	}
	return s
}

// codeList is "`a`, `b`, `c`", joined by sep before the last.
func codeList(s []string, last string) string {
	c := make([]string, len(s))
	for i, v := range s {
		c[i] = "`" + v + "`"
	}
	if len(c) < 2 {
		return strings.Join(c, "")
	}
	return strings.Join(c[:len(c)-1], ", ") + last + c[len(c)-1]
}
