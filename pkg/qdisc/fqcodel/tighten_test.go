package fqcodel_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
)

// fields prints c field by field: its String, as tc shows fq_codel,
// leaves some out.
func fields(c fqcodel.Config) string {
	type plain fqcodel.Config
	return fmt.Sprintf("%+v", plain(c))
}

// TestTighten: a pod's fq_codel is held to the operator's in what it
// takes of the host: its packet limit, memory limit and flow table are
// each at most the operator's (Linux's default where either leaves one
// unset). Where they are, the pod's words are what runs, its CoDel
// (target, interval, quantum, ECN, drop batch, CE threshold), which
// orders and drops only its own packets, as it gives them, looser or
// not; where one is larger, it is refused with a *ConfigError naming the
// word and the operator's value.
func TestTighten(t *testing.T) {
	for _, tc := range []struct {
		name          string
		operator, pod string
		field         string   // "" for accepted; else the ConfigError's Field
		says          []string // what the error says
	}{
		{name: "both Linux's defaults", operator: "", pod: ""},
		{name: "the operator's own", operator: "limit 1000 flows 256 memory_limit 4mb", pod: "limit 1000 flows 256 memory_limit 4mb"},
		{name: "every limit lower", operator: "limit 1000 flows 256 memory_limit 4mb", pod: "limit 10 flows 16 memory_limit 64k"},
		{name: "the defaults given explicitly", operator: "", pod: "limit 10240 flows 1024 memory_limit 32mb"},
		{name: "the operator's defaults given explicitly", operator: "limit 10240 flows 1024 memory_limit 32mb", pod: ""},
		{
			name:     "CoDel's knobs are the pod's, even looser",
			operator: "limit 1000 flows 256 memory_limit 4mb target 5ms interval 100ms quantum 1514 drop_batch 64 ecn",
			pod:      "limit 1000 flows 256 memory_limit 4mb target 50ms interval 1s quantum 65536 drop_batch 1 noecn ce_threshold 2ms",
		},
		{
			name:     "a limit above the operator's",
			operator: "limit 1000", pod: "limit 1001",
			field: "limit", says: []string{"limit 1001 is above the operator's 1000", "give 1000 or less"},
		},
		{
			name:     "the default limit above the operator's",
			operator: "limit 1000", pod: "",
			field: "limit", says: []string{"limit 10240 is above the operator's 1000"},
		},
		{
			name:     "a limit above the operator's default",
			operator: "", pod: "limit 10241",
			field: "limit", says: []string{"limit 10241 is above the operator's 10240"},
		},
		{
			name:     "a memory limit above the operator's",
			operator: "memory_limit 4mb", pod: "memory_limit 8mb",
			field: "memory_limit", says: []string{"memory_limit 8388608 is above the operator's 4194304"},
		},
		{
			name:     "the default memory limit above the operator's",
			operator: "memory_limit 4mb", pod: "target 2ms",
			field: "memory_limit", says: []string{"memory_limit 33554432 is above the operator's 4194304"},
		},
		{
			name:     "more flows than the operator's",
			operator: "flows 256", pod: "flows 257",
			field: "flows", says: []string{"flows 257 is above the operator's 256"},
		},
		{
			name:     "more flows than the operator's default",
			operator: "", pod: "flows 2048",
			field: "flows", says: []string{"flows 2048 is above the operator's 1024"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, err := fqcodel.Parse(tc.operator)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.operator, err)
			}
			pod, err := fqcodel.Parse(tc.pod)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.pod, err)
			}
			got, err := op.Tighten(pod)
			viaKind, kerr := fqcodel.Kind.Tighten(fqcodel.Options(op), fqcodel.Options(pod))
			if tc.field == "" {
				if err != nil {
					t.Fatalf("operator %q: Tighten(%q): %v; want it accepted", tc.operator, tc.pod, err)
				}
				if got != pod {
					t.Errorf("operator %q: Tighten(%q) =\n%s\nwant the pod's own\n%s", tc.operator, tc.pod, fields(got), fields(pod))
				}
				if kerr != nil || viaKind != qdisc.Options(fqcodel.Options(got)) {
					t.Errorf("Kind.Tighten = %v, %v; want Config.Tighten's %v", viaKind, kerr, got)
				}
				return
			}
			var ce *fqcodel.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("operator %q: Tighten(%q) = %v, %v; want a *ConfigError naming %s", tc.operator, tc.pod, got, err, tc.field)
			}
			if ce.Field != tc.field {
				t.Errorf("Tighten(%q): %v names %q; want %q", tc.pod, err, ce.Field, tc.field)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Tighten(%q): %q; want it to say %q", tc.pod, err, s)
				}
			}
			if kerr == nil || viaKind != nil {
				t.Errorf("Kind.Tighten = %v, %v; want Config.Tighten's error", viaKind, kerr)
			}
		})
	}
}

// TestKindRoundTrip: what Kind.Parse reads, String writes back in words
// Kind.Parse reads to the same Config, as qdisc.Options promises: a
// runtime keeps a kind's options as their String and parses them again
// (package runscflags keeps --qdisc-ingress-fq-codel's words so, and a
// pod's words after Tighten), so words String writes that Parse refuses,
// or a knob String leaves out, are lost on the way.
func TestKindRoundTrip(t *testing.T) {
	for _, words := range []string{
		"",
		"target 5ms interval 100ms",
		"limit 100 target 2ms",
		"limit 1000 flows 256 memory_limit 4mb quantum 1514 drop_batch 32",
		"limit 100 noecn",
		"target 1ms interval 20ms ce_threshold 500us",
	} {
		t.Run(words, func(t *testing.T) {
			o, err := fqcodel.Kind.Parse(words)
			if err != nil {
				t.Fatalf("Kind.Parse(%q): %v", words, err)
			}
			again, err := fqcodel.Kind.Parse(o.String())
			if err != nil {
				t.Fatalf("Kind.Parse(%q), of Kind.Parse(%q).String(): %v", o.String(), words, err)
			}
			if again != o {
				t.Errorf("Kind.Parse(%q) =\n%s\nKind.Parse of its String %q =\n%s\nwant the same Config", words, fields(fqcodel.Config(o.(fqcodel.Options))), o.String(), fields(fqcodel.Config(again.(fqcodel.Options))))
			}
		})
	}
}

// TestKindRoundTripNoECN: a pod or operator that turns ECN off keeps it
// off through the kind's words and Parse (the words must say noecn, since
// Parse's default is ecn).
func TestKindRoundTripNoECN(t *testing.T) {
	c := fqcodel.Config{Limit: 100, NoECN: true, Target: 2 * time.Millisecond}
	s := fqcodel.Options(c).String()
	if !strings.Contains(s, "noecn") {
		t.Errorf("Options(Config{NoECN: true}).String() = %q; want it to say noecn, which Parse needs to keep ECN off", s)
	}
	o, err := fqcodel.Kind.Parse(s)
	if err != nil || fqcodel.Config(o.(fqcodel.Options)) != c {
		t.Errorf("Kind.Parse(%q) = %v, %v; want %+v", s, o, err, c)
	}
}
