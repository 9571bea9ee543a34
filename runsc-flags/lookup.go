package runscflags

import "fmt"

// Set parses value, flag text as on the command line ("10mbit", "50ms",
// "fq_codel"), into the field of the flag called name (without dashes),
// as the flag would. It does not Validate, and it changes the value, not
// the ceilings annotations are held to (the operator's, as NewFromFlags
// read them). An unknown name or a value that does not parse is an error
// naming the flag, and leaves c unchanged.
func (c *Config) Set(name, value string) error {
	f := lookup(name)
	if f == nil {
		return fmt.Errorf("unknown flag --%s", name)
	}
	if err := f.set(c, value); err != nil {
		return fmt.Errorf("invalid value %q for --%s: %w", value, name, err)
	}
	return nil
}

// Get returns the value of the flag called name (without dashes) as flag
// text, as Args passes it: bare numbers (bytes/s, bytes), Go durations,
// names ("fifo"), "true" or "false". It returns "" for an unknown name.
// Set(name, Get(name)) changes nothing.
func (c *Config) Get(name string) string {
	f := lookup(name)
	if f == nil {
		return ""
	}
	return f.get(c)
}

// CheckAnnotation applies the per-flag policy (the table's Rule for name)
// to the annotation dev.gvisor.flag.<name>=value: it returns nil if
// ApplyAnnotations may apply it to operator, else the error
// ApplyAnnotations gives for that annotation alone. The ceilings are
// operator's values or, once it has had annotations applied, the values it
// had before (as ApplyAnnotations holds them). Without
// --allow-flag-override in operator, that is the policy; with it, only
// that the value parses and that the flag is one an annotation may set.
//
// It checks the one flag: the rules between flags (a peak rate needs an
// MTU, a tbf child excludes a tbf limit, --qdisc=tbf needs a rate...) are
// Validate's, which ApplyAnnotations runs on the result. A name this
// package does not own (Owns), but --allow-flag-override, is an error,
// where ApplyAnnotations leaves its annotation to the runtime.
func CheckAnnotation(operator *Config, name, value string) error {
	f := lookup(name)
	if f == nil {
		return fmt.Errorf("annotation %s%s=%q: --%s is not a qdisc flag; the runtime applies it", AnnotationPrefix, name, value, name)
	}
	op := operator.ceilings()
	scratch := *op
	if err := f.annotate(op, &scratch, value); err != nil {
		return fmt.Errorf("annotation %s%s=%q: %w", AnnotationPrefix, name, value, err)
	}
	return nil
}
