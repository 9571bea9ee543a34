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
