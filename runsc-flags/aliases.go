package runscflags

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// The words flags of the kinds the table shapes with a flag a knob:
// --qdisc-tbf="rate 10mbit burst 32k latency 25ms", --qdisc-ingress-tbf
// and --qdisc-fq-codel, read by the kind's own parser (tc's words: a bare
// rate is bits/s, a bare time microseconds) and held in the knobs' flags,
// which stay what they are (upstream runsc's --qdisc-tbf-rate and
// --qdisc-tbf-burst among them), with their annotation keys. The words
// set the knobs they name and reset the kind's other knobs; "" leaves
// them all as they are.

// alias is the words of a kind whose knobs are flags of their own.
type alias struct {
	// kind is tc's name of the kind.
	kind string
	// knobs are the flags its words hold.
	knobs []string
	// values reads words as the kind does and returns the value, as flag
	// text, of each knob they name; an error says which word to change.
	values func(words string) (map[string]string, error)
	// words writes the knobs' values in c as the kind's words, "" when
	// the kind is not set there.
	words func(c *Config) string
	// options returns the kind's options as the knobs in c give them,
	// for its Kind (Flag.options), whether or not it is set there.
	options func(c *Config) qdisc.Options
}

// aliasRef is the field of an alias's flag: the knobs of c.
type aliasRef struct {
	c *Config
	a *alias
}

// setWords sets a's knobs in c from words: those they name to their
// values, the others to their defaults; "" changes nothing.
func (a *alias) setWords(c *Config, words string) error {
	if strings.TrimSpace(words) == "" {
		return nil
	}
	vals, err := a.values(words)
	if err != nil {
		return err
	}
	for _, k := range a.knobs {
		f := lookup(k)
		v, ok := vals[k]
		if !ok {
			v = f.Default
		}
		if err := f.set(c, v); err != nil {
			return fmt.Errorf("--%s=%s: %w", k, v, err)
		}
	}
	return nil
}

// expand returns words as the changes of each knob, "--name=value", for
// `runsc qdisc change`: every knob, named or reset.
func (a *alias) expand(c *Config, words string) ([]string, error) {
	var scratch Config
	if err := a.setWords(&scratch, words); err != nil {
		return nil, err
	}
	var args []string
	for _, k := range a.knobs {
		f := lookup(k)
		if v := f.get(&scratch); v != f.get(c) {
			args = append(args, "--"+k+"="+v)
		}
	}
	return args, nil
}

// annotate applies a pod's words for a: each knob they name under its own
// flag's rule; the knobs they do not name stay the operator's.
func (a *alias) annotate(op, next *Config, words string) error {
	vals, err := a.values(words)
	if err != nil {
		return err
	}
	for _, k := range a.knobs {
		if v, ok := vals[k]; ok {
			if err := lookup(k).annotate(op, next, v); err != nil {
				return fmt.Errorf("--%s=%s: %w", k, v, err)
			}
		}
	}
	return nil
}

// tbfKnobs are each direction's tbf flags by tc-tbf's words (the packet
// rate and burst are not tc-tbf's: they stay flags alone).
var tbfKnobs = map[Ceiling][]struct{ word, flag string }{
	EgressCeiling: {{"rate", FlagTBFRate}, {"burst", FlagTBFBurst}, {"peakrate", FlagTBFPeakRate}, {"mtu", FlagTBFMTU}, {"limit", FlagTBFLimit}, {"latency", FlagTBFLatency},
		{"overhead", FlagTBFOverhead}, {"mpu", FlagTBFMPU}, {"linklayer", FlagTBFLinkLayer}},
	IngressCeiling: {{"rate", FlagIngressRate}, {"burst", FlagIngressBurst}, {"limit", FlagIngressLimit}, {"latency", FlagIngressLatency}},
}

// tbfWordOrder is tc-tbf's words in the order its usage gives them.
var tbfWordOrder = []string{"rate", "burst", "peakrate", "mtu", "limit", "latency", "overhead", "mpu", "linklayer"}

// tbfWords are tc-tbf's words as Parse reads them into t, each as the
// flag text of its knob ("" where t leaves it unset).
func tbfWords(t tbf.Config) map[string]string {
	set := func(v uint64) string {
		if v == 0 {
			return ""
		}
		return strconv.FormatUint(v, 10)
	}
	w := map[string]string{
		"rate": set(t.Rate), "burst": set(uint64(t.Burst)), "peakrate": set(t.PeakRate), "mtu": set(uint64(t.MTU)),
		"limit": set(uint64(t.Limit)), "overhead": set(uint64(t.Overhead)), "mpu": set(uint64(t.MPU)),
	}
	if t.Latency != 0 {
		w["latency"] = t.Latency.String()
	}
	if t.ATM {
		w["linklayer"] = linkLayerATM
	}
	return w
}

// tbfAlias is tbf's words in direction d: rate, burst, latency or limit
// and, on the send path, peakrate and mtu, overhead, mpu and linklayer.
func tbfAlias(d Ceiling) *alias {
	byWord := map[string]string{}
	var knobs []string
	for _, k := range tbfKnobs[d] {
		byWord[k.word] = k.flag
		knobs = append(knobs, k.flag)
	}
	return &alias{
		kind:  "tbf",
		knobs: knobs,
		values: func(words string) (map[string]string, error) {
			t, err := tbf.Parse(words)
			if err != nil {
				return nil, err
			}
			vals := map[string]string{}
			given := tbfWords(t)
			for _, word := range tbfWordOrder {
				v := given[word]
				if v == "" {
					continue
				}
				name, ok := byWord[word]
				if !ok {
					return nil, fmt.Errorf("tbf: %s is not taken on what the sandbox receives (no flag holds it); leave it out", word)
				}
				vals[name] = v
			}
			return vals, nil
		},
		words: func(c *Config) string {
			if t := c.tbfConfig(d); t.Rate != 0 {
				return t.Words()
			}
			return ""
		},
		options: func(c *Config) qdisc.Options {
			if d == IngressCeiling {
				return tbf.Options(c.IngressConfig())
			}
			return tbf.Options(c.TBFConfig())
		},
	}
}

// fqCoDelAlias is fq_codel's words on the send path.
var fqCoDelAlias = &alias{
	kind: "fq_codel",
	knobs: []string{FlagFQCoDelLimit, FlagFQCoDelFlows, FlagFQCoDelQuantum, FlagFQCoDelTarget, FlagFQCoDelInterval,
		FlagFQCoDelMemLimit, FlagFQCoDelDropBatch, FlagFQCoDelECN, FlagFQCoDelCEThreshold},
	values: func(words string) (map[string]string, error) {
		q, err := fqcodel.Parse(words)
		if err != nil {
			return nil, err
		}
		if q.CESelector != 0 || q.CEMask != 0 {
			return nil, fmt.Errorf("fq_codel: ce_threshold_selector is not taken here (no flag holds it); leave it out")
		}
		vals := map[string]string{}
		for _, x := range []struct {
			flag string
			v    uint64
		}{{FlagFQCoDelLimit, uint64(q.Limit)}, {FlagFQCoDelFlows, uint64(q.Flows)}, {FlagFQCoDelQuantum, uint64(q.Quantum)}, {FlagFQCoDelMemLimit, uint64(q.MemoryLimit)}, {FlagFQCoDelDropBatch, uint64(q.DropBatch)}} {
			if x.v != 0 {
				vals[x.flag] = strconv.FormatUint(x.v, 10)
			}
		}
		for _, x := range []struct {
			flag string
			v    time.Duration
		}{{FlagFQCoDelTarget, q.Target}, {FlagFQCoDelInterval, q.Interval}, {FlagFQCoDelCEThreshold, q.CEThreshold}} {
			if x.v != 0 {
				vals[x.flag] = x.v.String()
			}
		}
		if q.NoECN {
			vals[FlagFQCoDelECN] = "false"
		}
		return vals, nil
	},
	words: func(c *Config) string {
		if !c.grafts(fqcodel.Kind.Name) {
			return ""
		}
		return c.FQCoDelConfig().Words()
	},
	options: func(c *Config) qdisc.Options { return fqcodel.Options(c.FQCoDelConfig()) },
}

// aliasRows are the aliases' flags, after the knobs they hold.
func aliasRows() []Flag {
	row := func(name string, a *alias, on string) Flag {
		return Flag{
			Name: name, Kind: KindAliasWords,
			Unset:      "its knobs' flags",
			Example:    map[string]string{"tbf": "rate 10mbit burst 32k latency 25ms", "fq_codel": "limit 10240 target 5ms"}[a.kind],
			Usage:      fmt.Sprintf("%s on %s in tc-%s's words, which set its knobs' flags (%s) and reset the others; \"\" leaves them as they are.", a.kind, on, a.kind, strings.Join(a.knobs, ", ")),
			Annotation: Rule{Permit: Lower, Note: "each word as its knob's flag may be set"},
			Linux:      Linux{Qdisc: a.kind},
			alias:      a,
			field:      func(c *Config) any { return aliasRef{c, a} },
			options:    func(c *Config) (qdisc.Options, error) { return a.options(c), nil },
		}
	}
	return []Flag{
		row("qdisc-tbf", tbfAlias(EgressCeiling), "what the sandbox sends"),
		row("qdisc-ingress-tbf", tbfAlias(IngressCeiling), "what the sandbox receives"),
		row("qdisc-fq-codel", fqCoDelAlias, "what the sandbox sends"),
	}
}
