package runscflags

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// AnnotationPrefix starts the OCI annotation keys that set flags.
const AnnotationPrefix = "dev.gvisor.flag."

// requiresOverride ends the refusals --allow-flag-override would lift.
const requiresOverride = "requires the runtime flag --" + FlagAllowFlagOverride

// ApplyAnnotations applies the dev.gvisor.flag.* annotations this package
// owns, under each flag's Rule (Flags) and the rules of the package doc,
// and Kubernetes' bandwidth annotations. It is atomic: on error the Config
// is unchanged.
func (c *Config) ApplyAnnotations(annotations map[string]string) error {
	op := c.ceilings()
	c.operator = op
	next := *c
	next.Notices = slices.Clone(c.Notices) // c's stay as they are if the set is refused
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		if strings.HasPrefix(k, AnnotationPrefix) || k == AnnotationKubeEgress || k == AnnotationKubeIngress {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys) // the first error is the same whatever the map order
	var applied []string
	for _, key := range keys {
		value := annotations[key]
		if key == AnnotationKubeEgress || key == AnnotationKubeIngress {
			r, err := ParseKubeBandwidth(value)
			if err != nil {
				return fmt.Errorf("annotation %s=%q: %w", key, value, err)
			}
			next.applyKube(op, key, value, r)
			applied = append(applied, key)
			continue
		}
		f := lookup(strings.TrimPrefix(key, AnnotationPrefix))
		if f == nil {
			continue // a flag the runtime owns
		}
		if err := f.annotate(op, &next, value); err != nil {
			return fmt.Errorf("annotation %s=%q: %w", key, value, err)
		}
		applied = append(applied, key)
	}
	if err := next.Validate(); err != nil {
		return fmt.Errorf("annotations %s give an invalid configuration: %w", strings.Join(applied, ", "), err)
	}
	*c = next
	return nil
}

// ceilings returns the operator's values annotations are held to: c's
// own until its first ApplyAnnotations (or since NewFromFlags).
func (c *Config) ceilings() *Config {
	if c.operator != nil {
		return c.operator
	}
	return c.snapshot()
}

// annotate applies an annotation's value for f to next under f's Rule,
// against the operator's values op; the error does not name the
// annotation.
func (f *Flag) annotate(op, next *Config, value string) error {
	r, override := f.Annotation, op.AllowFlagOverride
	switch {
	case r.Permit == Never:
		return fmt.Errorf("--%s is the operator's and cannot be set by an annotation", f.Name)
	case r.Permit == OperatorOnly && !override:
		return fmt.Errorf("--%s bounds nothing, so it is the operator's to set; setting it %s", f.Name, requiresOverride)
	}
	if f.alias != nil {
		return f.alias.annotate(op, next, value)
	}
	if r.Permit == Tighten && f.words != nil {
		return f.tightenKind(op, next, value)
	}
	if r.Permit == Tighten && (f.Kind == KindCake || f.Kind == KindCakeKnob) {
		return f.tightenCake(op, next, value)
	}
	if r.Permit == Tighten {
		return f.tighten(op, next, value)
	}
	v, err := f.Kind.parse(value)
	if f.Kind == KindDuration && r.Permit == Lower && (err != nil || v.(time.Duration) <= 0) {
		return fmt.Errorf("want a positive duration such as %s", f.Example)
	}
	if err != nil {
		return err
	}
	switch {
	case r.Permit == Select && !override:
		var chosen Config
		f.assign(&chosen, v)
		if got, over := f.get(&chosen), f.get(op); !r.selects(got, over) {
			return fmt.Errorf("only %s may be selected; %s=%s over the operator's %s %s", r.choices(), f.Name, got, over, requiresOverride)
		}
	case r.Permit == Lower:
		if err := f.lower(op, v); err != nil {
			return err
		}
	}
	f.assign(next, v)
	return nil
}

// lower checks v, of the field's type, against a Lower flag's ceiling,
// which --allow-flag-override lifts.
func (f *Flag) lower(op *Config, v any) error {
	r := f.Annotation
	var scratch Config
	f.assign(&scratch, v)
	n := f.number(&scratch)
	if n == 0 && r.Unset == DefaultCeiling { // even with --allow-flag-override
		return fmt.Errorf("0 would mean Linux's default for --%s; only a non-zero value no greater than the ceiling may be set", f.Name)
	}
	if op.AllowFlagOverride {
		return nil
	}
	if n == 0 {
		return fmt.Errorf("0 would unset --%s; only a non-zero value no greater than the operator's may be set, or the change %s", f.Name, requiresOverride)
	}
	if ceiling := f.number(op); ceiling != 0 && n > ceiling {
		return fmt.Errorf("%s exceeds the operator's ceiling --%s=%s; raising it %s", f.show(n), f.Name, f.show(ceiling), requiresOverride)
	} else if ceiling == 0 && r.Unset == DefaultCeiling && n > r.Default {
		return fmt.Errorf("%s exceeds the ceiling --%s=%s, Linux's default, which the operator left in force; raising it %s", f.show(n), f.Name, f.show(r.Default), requiresOverride)
	}
	return nil
}

// selects reports whether a Select flag may be set to v where the
// operator's value is over.
func (r Rule) selects(v, over string) bool {
	for _, ch := range r.Choices {
		if ch.Value == v && (len(ch.Over) == 0 || slices.Contains(ch.Over, over)) {
			return true
		}
	}
	return false
}

// choices says what a Select rule allows: "tbf, or fq_codel in place of
// none, fifo or fq_codel".
func (r Rule) choices() string {
	var s []string
	for _, ch := range r.Choices {
		if len(ch.Over) == 0 {
			s = append(s, ch.Value)
		} else {
			s = append(s, ch.Value+" in place of "+orList(ch.Over))
		}
	}
	if len(s) > 1 {
		return strings.Join(s, ", or ") + ","
	}
	return s[0]
}

// orList is "a, b or c".
func orList(s []string) string { return joinList(s, "or") }

// joinList is "a, b or c", with conj in place of "or".
func joinList(s []string, conj string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " " + conj + " " + s[len(s)-1]
}
