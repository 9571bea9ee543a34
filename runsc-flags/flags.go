package runscflags

import (
	"errors"
	"flag"
	"fmt"
)

// RegisterFlags registers the qdisc flags and --allow-flag-override on fs.
func RegisterFlags(fs *flag.FlagSet) {
	RegisterQDiscFlags(fs)
	register(fs, lookup(FlagAllowFlagOverride), defaults())
}

// RegisterQDiscFlags registers the qdisc flags on fs, but not
// --allow-flag-override: for a runtime that has that flag already (runsc),
// which NewFromFlags then reads as the operator's switch.
func RegisterQDiscFlags(fs *flag.FlagSet) {
	held := defaults()
	all := AllFlags()
	for i := range all {
		if !all[i].runtime {
			register(fs, &all[i], held)
		}
	}
}

// register registers f on fs, its value held in held.
func register(fs *flag.FlagSet, f *Flag, held *Config) {
	usage := f.help()
	if f.Kind == KindDuration {
		// flag.PrintDefaults names a value's type from a back-quoted word
		// of its usage: "-qdisc-tbf-latency duration", as fs.Duration shows.
		usage += " A Go `duration`."
	}
	fs.Var(value{f, held}, f.Name, usage)
}

// defaults returns the Config of every flag's default.
func defaults() *Config {
	c := &Config{}
	all := AllFlags()
	for i := range all {
		if err := all[i].set(c, all[i].Default); err != nil {
			panic(fmt.Sprintf("--%s: default %q: %v", all[i].Name, all[i].Default, err))
		}
	}
	return c
}

// Owns reports whether name (without dashes) is a flag RegisterQDiscFlags
// registers: a runtime hands annotations for these to ApplyAnnotations and
// applies the others by its own rules.
func Owns(name string) bool {
	f := lookup(name)
	return f != nil && !f.runtime
}

// Args returns the flags that give c's qdisc values to a FlagSet on which
// RegisterQDiscFlags registered them: "--name=value" for each value that is
// not the flag's default, in the bare units (bytes/s, bytes) and Go
// durations that parse back exactly (Get). A runtime that re-executes
// itself (runsc starts the sandbox's boot process with its flags) passes
// these on, so the boot process sees the configuration after annotations.
// --allow-flag-override is the runtime's to pass.
func (c *Config) Args() []string {
	var args []string
	all := AllFlags()
	for i := range all {
		f := &all[i]
		if v := f.get(c); !f.runtime && f.alias == nil && v != f.Default {
			args = append(args, "--"+f.Name+"="+v)
		}
	}
	return args
}

// NewFromFlags returns the Config that fs's qdisc flags give, validated.
// RegisterFlags (or RegisterQDiscFlags, beside the runtime's own
// --allow-flag-override) must have registered them and fs must have been
// parsed.
func NewFromFlags(fs *flag.FlagSet) (*Config, error) {
	c := &Config{}
	var errs []error
	for _, f := range AllFlags() {
		fl := fs.Lookup(f.Name)
		if fl == nil {
			errs = append(errs, fmt.Errorf("flag --%s is not registered; call RegisterFlags first", f.Name))
			continue
		}
		if f.alias != nil {
			continue // its words are in its knobs' flags
		}
		if err := c.Set(f.Name, fl.Value.String()); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.operator = c.snapshot()
	return c, nil
}
