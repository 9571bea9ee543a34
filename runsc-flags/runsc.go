package runscflags

import "flag"

// What a runtime needs: it applies every annotation for a flag this
// package Owns, and Kubernetes' bandwidth annotations, as one set with
// Config.ApplyAnnotations, to the operator's Config, and then sets each
// flag whose value (Get) that changed; runsc's patch 0003 does
// (ApplyQDiscAnnotations). It must not set a flag to an annotation's own
// value: an htb or cake annotation is a change the policy merges into the
// operator's words, so the value that runs is ApplyAnnotations', never the
// annotation's. ApplyAnnotations is the one way in: a checkpoint's saved
// changes meet it too (NIC.Restore). MayAnnotate says which flags to list
// as safe to override (runsc features).

// MayAnnotate reports whether an annotation may set the flag called name
// (without dashes) without --allow-flag-override, within its Rule (Select,
// Lower, Raise or Tighten): what a runtime lists as safe to override (runsc
// features). ApplyAnnotations says which values.
func MayAnnotate(name string) bool {
	f := lookup(name)
	return f != nil && !f.runtime && (f.Annotation.Permit == Select || f.Annotation.Permit == Lower || f.Annotation.Permit == Tighten || f.Annotation.Permit == Raise)
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
