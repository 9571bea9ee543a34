package runscflags

import "time"

// The table's Lower flags, as the policy tests look at them: the tbf's
// and the ingress shaper's numbers (ceilingKnobs) and durations
// (durationKnobs), whose operator's value is the ceiling when set, and
// fq_codel's (fqCeilings), whose ceiling is otherwise Linux's default.
type (
	knob   struct{ field func(*Config) *uint64 }
	fqKnob struct {
		field func(*Config) *uint64
		dur   func(*Config) *time.Duration
		def   uint64
	}
)

var (
	ceilingKnobs  = map[string]knob{}
	durationKnobs = map[string]func(*Config) *time.Duration{}
	fqCeilings    = map[string]fqKnob{}
)

func init() {
	for i := range Flags {
		f := &Flags[i]
		if f.Annotation.Permit != Lower {
			continue
		}
		u, _ := f.field(&Config{}).(*uint64)
		var field func(*Config) *uint64
		var dur func(*Config) *time.Duration
		if u != nil {
			field = func(c *Config) *uint64 { return f.field(c).(*uint64) }
		} else {
			dur = func(c *Config) *time.Duration { return f.field(c).(*time.Duration) }
		}
		switch {
		case f.Annotation.Unset == DefaultCeiling:
			fqCeilings[f.Name] = fqKnob{field, dur, f.Annotation.Default}
		case field != nil:
			ceilingKnobs[f.Name] = knob{field}
		default:
			durationKnobs[f.Name] = dur
		}
	}
}
