package runscflags

import (
	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// KindOf returns the registered kind that shapes direction d
// (EgressCeiling: what the sandbox sends; IngressCeiling: what it
// receives), with its options as c's flags give them: for a runtime's
// metrics (Kind.Metrics, Members) and anything else it asks of a kind. ok
// is false where d is not shaped, or its kind is not registered.
func (c *Config) KindOf(d Ceiling) (k qdisc.Kind, o qdisc.Options, ok bool) {
	if in, ok, err := c.kindOf(d); ok && err == nil {
		return *in.kind, in.opts, true
	}
	name := c.ingressName()
	if d == EgressCeiling {
		name = c.QDisc.String()
	}
	k, ok = qdisc.Lookup(name)
	if !ok {
		return qdisc.Kind{}, nil, false
	}
	var err error
	switch name {
	case "tbf":
		o = tbf.Options(c.tbfConfig(d))
	case "fq_codel":
		o = fqcodel.Options(c.FQCoDelConfig())
	case "cake":
		if d == EgressCeiling {
			o, err = c.CakeConfig()
		} else {
			o, err = c.IngressCakeConfig()
		}
	case "htb":
		script := c.HTB
		if d == IngressCeiling {
			script = c.IngressHTB
		}
		o, err = k.Parse(script)
	default:
		return qdisc.Kind{}, nil, false
	}
	if err != nil {
		return qdisc.Kind{}, nil, false // Validate refused it before
	}
	return k, o, true
}
