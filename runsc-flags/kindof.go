package runscflags

import (
	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// KindOf returns the registered kind that shapes direction d
// (EgressCeiling: what the sandbox sends; IngressCeiling: what it
// receives), with its options as c's flags give them: for a runtime's
// metrics (Kind.Metrics, Members) and anything else it asks of a kind. ok
// is false where d is not shaped, or its kind is not registered.
func (c *Config) KindOf(d Ceiling) (k qdisc.Kind, o qdisc.Options, ok bool) {
	in, ok, err := c.kindOf(d)
	if !ok || err != nil {
		return qdisc.Kind{}, nil, false // Validate refused an error before
	}
	return *in.kind, in.opts, true
}
