package runscflags

import "flag"

// What a runtime needs: it applies every annotation for a flag this
// package Owns, and Kubernetes' bandwidth annotations, as one set with
// Config.ApplyAnnotations, to the operator's Config, and then sets each
// flag whose value (Get) that changed; runsc's patch 0003 does
// (ApplyQDiscAnnotations). It must not set a flag to an annotation's own
// value: an htb or cake annotation is a change the policy merges into the
// operator's words, so the value that runs is ApplyAnnotations', never the
// annotation's. MayAnnotate says which flags to list as safe to override
// (runsc features); CheckAnnotation and ApplyKubernetesAnnotations check
// or apply part of a set, for runtimes that report per annotation.

// MayAnnotate reports whether an annotation may set the flag called name
// (without dashes) without --allow-flag-override, within its Rule (Select
// or Lower): what a runtime lists as safe to override (runsc features).
// CheckAnnotation says which values.
func MayAnnotate(name string) bool {
	f := lookup(name)
	return f != nil && !f.runtime && (f.Annotation.Permit == Select || f.Annotation.Permit == Lower || f.Annotation.Permit == Tighten)
}

// ApplyKubernetesAnnotations applies Kubernetes' bandwidth annotations in
// annotations (AnnotationKubeEgress and AnnotationKubeIngress; it ignores
// every other key) to c under the package's policy, as ApplyAnnotations
// does, but with operator's values as the ceilings: c is the configuration
// in force once the runtime has applied the dev.gvisor.flag.* annotations,
// and operator the one before them, the operator's flags. A bandwidth only
// tightens what is in force in c; one above operator's rate is held to it
// and noted in Notices, which name operator's value. Like ApplyAnnotations,
// it validates the result and is atomic: on error c is unchanged.
func (c *Config) ApplyKubernetesAnnotations(operator *Config, annotations map[string]string) error {
	kube := make(map[string]string)
	for _, key := range []string{AnnotationKubeEgress, AnnotationKubeIngress} {
		if v, ok := annotations[key]; ok {
			kube[key] = v
		}
	}
	if len(kube) == 0 {
		return nil
	}
	// A Config's ceilings are its values at its first ApplyAnnotations,
	// and Set changes its values, not its ceilings: next takes operator's
	// values and fixes them as its ceilings, then takes c's.
	var next Config
	for _, f := range AllFlags() {
		if err := next.Set(f.Name, operator.Get(f.Name)); err != nil {
			return err
		}
	}
	if err := next.ApplyAnnotations(nil); err != nil {
		return err
	}
	for _, f := range AllFlags() {
		if err := next.Set(f.Name, c.Get(f.Name)); err != nil {
			return err
		}
	}
	next.Notices = append([]string(nil), c.Notices...)
	if err := next.ApplyAnnotations(kube); err != nil {
		return err
	}
	*c = next
	return nil
}

// ArgsOf returns the Args of the values fs's qdisc flags hold
// (RegisterQDiscFlags registered them there), not validated: for a runtime
// that hands the flags on to another process, which validates them.
func ArgsOf(fs *flag.FlagSet) ([]string, error) {
	c := &Config{}
	for _, f := range AllFlags() {
		fl := fs.Lookup(f.Name)
		if fl == nil || f.runtime || f.alias != nil {
			continue // the aliases' words are in their knobs' flags
		}
		if err := c.Set(f.Name, fl.Value.String()); err != nil {
			return nil, err
		}
	}
	return c.Args(), nil
}
