package runscflags

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// QueueingDiscipline is the --qdisc choice: a registered kind's name
// (qdisc.Lookup), or none, held as "" (the zero Config sends straight to
// the link). Every kind, runsc's fifo and tbf among them, is its
// package's registration: none is named here.
type QueueingDiscipline string

// QDiscNone sends packets straight to the link: no qdisc.
const QDiscNone QueueingDiscipline = ""

// noneName is what --qdisc takes and prints for QDiscNone.
const noneName = "none"

// QDiscOf returns the choice of the kind k (fifo.Kind, tbf.Kind, a kind
// another package registers).
func QDiscOf(k qdisc.Kind) QueueingDiscipline { return QueueingDiscipline(k.Name) }

// Is reports whether q chooses the kind k.
func (q QueueingDiscipline) Is(k qdisc.Kind) bool { return string(q) == k.Name }

// Set implements flag.Value.Set: none, or a registered kind's name.
func (q *QueueingDiscipline) Set(v string) error {
	if v == noneName {
		*q = QDiscNone
		return nil
	}
	if _, ok := qdisc.Lookup(v); ok {
		*q = QueueingDiscipline(v)
		return nil
	}
	return fmt.Errorf("invalid qdisc %q: choose %s", v, orList(qdiscChoices()))
}

// String implements flag.Value.String.
func (q QueueingDiscipline) String() string {
	if q == QDiscNone {
		return noneName
	}
	return string(q)
}

// qdiscChoices are the names --qdisc takes: none, then every registered
// kind's.
func qdiscChoices() []string { return append([]string{noneName}, qdisc.KindNames()...) }

// valid reports whether q is none or a registered kind's.
func (q QueueingDiscipline) valid() bool {
	_, ok := qdisc.Lookup(string(q))
	return q == QDiscNone || ok
}

// Get implements flag.Getter.Get.
func (q *QueueingDiscipline) Get() any { return *q }

// --qdisc-tbf-child's values of the kinds registered here: fq, the
// default (held as ""), fifo (the tbf's own byte FIFO), and fq_codel. Any
// registered kind that can be grafted (Kind.Queue) is one (parseChild).
const (
	ChildFQ      = "fq"
	ChildFIFO    = "fifo"
	ChildFQCoDel = "fq_codel"
)

// Kind is the unit and syntax of a flag's value.
type Kind int

const (
	// KindQDisc is --qdisc's choice: none or a registered kind.
	KindQDisc Kind = iota
	// KindChild is the tbf child's choice: a registered kind that can be
	// grafted (Kind.Queue: fifo, fq, fq_codel); fq, the default, is held
	// as "".
	KindChild
	// KindRate is bytes per second, or tc's units ("10mbit").
	KindRate
	// KindSize is bytes, or tc's units ("64kb").
	KindSize
	// KindCount is a count that fits 32 bits (packets, flows).
	KindCount
	// KindDuration is a Go duration ("50ms").
	KindDuration
	// KindBool is true or false.
	KindBool
	// KindPacketRate is packets per second, bare or with units ("20kpps").
	KindPacketRate
	// KindHTB is an htb script (htb.Script): tc's words for a qdisc, its
	// classes and filters, held as htb.Script.String writes it back.
	KindHTB
	// KindCake is tc-cake's words ("bandwidth 100mbit dual-dsthost"), held
	// as cake.Config.String writes them back.
	KindCake
	// KindCakeKnob is one of cake's settings (--qdisc-cake-bandwidth=100mbit),
	// held as given: its flag's cakeWords turns it into tc-cake's words.
	KindCakeKnob
	// KindWords is a registered kind's words (Flag.words), held as the
	// kind writes them back.
	KindWords
	// KindName is a registered kind's name, or "" for none chosen.
	KindName
	// KindAliasWords is the words of a kind whose knobs are flags
	// (Flag.alias): held in those flags.
	KindAliasWords
	// KindText is text Validate reads as the flag's Example shows: a
	// file's path, a class's major:minor.
	KindText
	// KindLinkLayer is tc's linklayer: ethernet (the default, held as "")
	// or atm (adsl is atm too), held as "atm".
	KindLinkLayer
)

// parse reads flag text s as a value of the kind, of the field's type.
func (k Kind) parse(s string) (any, error) {
	switch k {
	case KindQDisc:
		var q QueueingDiscipline
		err := q.Set(s)
		return q, err
	case KindChild:
		return parseChild(s)
	case KindLinkLayer:
		return parseLinkLayer(s)
	case KindRate:
		return rate.ParseRate(s)
	case KindSize:
		return rate.ParseSize(s)
	case KindCount:
		return strconv.ParseUint(s, 10, 32)
	case KindDuration:
		return time.ParseDuration(s)
	case KindBool:
		return strconv.ParseBool(s)
	case KindPacketRate:
		return parsePacketRate(s)
	case KindHTB:
		if strings.TrimSpace(s) == "" {
			return "", nil
		}
		sc, err := htb.ParseScript(s)
		if err != nil {
			return "", err
		}
		return sc.String(), nil
	case KindCake:
		return parseCakeWords(s)
	case KindCakeKnob:
		return strings.TrimSpace(s), nil
	case KindName, KindText:
		return strings.TrimSpace(s), nil
	}
	return nil, fmt.Errorf("unknown kind %d", k)
}

// get returns the flag's value in c as flag text: bare numbers (bytes/s,
// bytes) and Go durations, which parse back exactly.
func (f *Flag) get(c *Config) string {
	switch p := f.field(c).(type) {
	case *QueueingDiscipline:
		return p.String()
	case *string:
		if *p == "" && (f.Kind == KindChild || f.Kind == KindLinkLayer) {
			return f.Default // held as ""
		}
		return *p
	case *uint64:
		return strconv.FormatUint(*p, 10)
	case *time.Duration:
		return p.String()
	case *bool:
		return strconv.FormatBool(*p != f.negated)
	case wordsRef:
		return p.get()
	case aliasRef:
		return p.a.words(p.c)
	}
	return ""
}

// set parses s and stores it in c; the error does not name the flag.
func (f *Flag) set(c *Config, s string) error {
	if f.cakeWords != nil {
		if _, err := f.cakeWords(strings.TrimSpace(s)); err != nil {
			return err
		}
	}
	if f.alias != nil {
		return f.alias.setWords(c, s)
	}
	if f.words != nil {
		w, err := parseWords(f.words, s)
		if err != nil {
			return err
		}
		f.assign(c, w)
		return nil
	}
	v, err := f.Kind.parse(s)
	if err != nil {
		return err
	}
	f.assign(c, v)
	return nil
}

// assign stores v, of the field's type, in c.
func (f *Flag) assign(c *Config, v any) {
	switch p := f.field(c).(type) {
	case *QueueingDiscipline:
		*p = v.(QueueingDiscipline)
	case *string:
		*p = v.(string)
	case *uint64:
		*p = v.(uint64)
	case *time.Duration:
		*p = v.(time.Duration)
	case *bool:
		*p = v.(bool) != f.negated
	case wordsRef:
		p.set(v.(string))
	}
}

// number returns the field's value as a number for ceilings: bytes/s,
// bytes, counts, or nanoseconds; 0 for choices and bools.
func (f *Flag) number(c *Config) uint64 {
	switch p := f.field(c).(type) {
	case *uint64:
		return *p
	case *time.Duration:
		return uint64(max(*p, 0))
	}
	return 0
}

// show says n, a number of the flag's units, for an error.
func (f *Flag) show(n uint64) string {
	switch f.Kind {
	case KindRate:
		return showRate(n)
	case KindSize:
		return showSize(n)
	case KindDuration:
		return time.Duration(n).String()
	case KindCount:
		return fmt.Sprintf("%d %s", n, f.Unit)
	case KindPacketRate:
		return fmt.Sprintf("%d packets/s", n)
	}
	return fmt.Sprint(n)
}

func showRate(v uint64) string { return fmt.Sprintf("%d bytes/s (%s)", v, rate.FormatRate(v)) }
func showSize(v uint64) string { return fmt.Sprintf("%d bytes", v) }

// value is a flag.Value (and flag.Getter) for a flag of the table, held
// in a Config.
type value struct {
	f *Flag
	c *Config
}

func (v value) Set(s string) error { return v.f.set(v.c, s) }

func (v value) String() string {
	if v.f == nil { // the zero value flag.PrintDefaults makes
		return ""
	}
	return v.f.get(v.c)
}

// Get returns the value as its field holds it (a bool as the flag says).
func (v value) Get() any {
	if b, ok := v.f.field(v.c).(*bool); ok {
		return *b != v.f.negated
	}
	return deref(v.f.field(v.c))
}

// IsBoolFlag lets a bool flag be given without a value.
func (v value) IsBoolFlag() bool { return v.f != nil && v.f.Kind == KindBool }

// deref returns what p, one of the field pointer types, points to.
func deref(p any) any {
	switch p := p.(type) {
	case *QueueingDiscipline:
		return *p
	case *string:
		return *p
	case *uint64:
		return *p
	case *time.Duration:
		return *p
	case wordsRef:
		return p.get()
	case aliasRef:
		return p.a.words(p.c)
	}
	return nil
}

// parsePacketRate reads a packet rate: a whole number of packets per
// second, with an optional k, m or g (thousands, millions, billions) and
// an optional "pps": 20000, 20000pps, 20kpps, 1.5mpps.
func parsePacketRate(s string) (uint64, error) {
	t := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "pps")
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, t[:len(t)-1]
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, t[:len(t)-1]
	case strings.HasSuffix(t, "g"):
		mult, t = 1e9, t[:len(t)-1]
	}
	v, err := strconv.ParseFloat(t, 64)
	n := v * mult
	if err != nil || t == "" || n < 0 || n != math.Trunc(n) || n > math.MaxUint64/2 {
		return 0, fmt.Errorf("invalid packet rate %q: give whole packets per second, such as 20000, 20kpps or 1.5mpps", s)
	}
	return uint64(n), nil
}

// linkLayerATM is --qdisc-tbf-linklayer's atm, as it is held.
const linkLayerATM = "atm"

// parseLinkLayer reads a linklayer as tc's tbf_parse_opt does, by any
// prefix: ethernet (held as ""), atm or adsl (held as "atm").
func parseLinkLayer(s string) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || strings.HasPrefix("ethernet", s):
		return "", nil
	case strings.HasPrefix("atm", s) || strings.HasPrefix("adsl", s):
		return linkLayerATM, nil
	}
	return "", fmt.Errorf("invalid linklayer %q: choose ethernet, atm or adsl (atm)", s)
}
