package runscflags

import "github.com/netqdisc/netqdisc/pkg/qdisc/htb"

// Node flag names: the sandbox's class of its node (package node), per
// direction.
const (
	FlagNode              = "qdisc-node"
	FlagNodeParent        = "qdisc-node-parent"
	FlagNodeRate          = "qdisc-node-rate"
	FlagNodeCeil          = "qdisc-node-ceil"
	FlagNodePrio          = "qdisc-node-prio"
	FlagIngressNode       = "qdisc-ingress-node"
	FlagIngressNodeParent = "qdisc-ingress-node-parent"
	FlagIngressNodeRate   = "qdisc-ingress-node-rate"
	FlagIngressNodeCeil   = "qdisc-ingress-node-ceil"
	FlagIngressNodePrio   = "qdisc-ingress-node-prio"
)

// nodeRows are the flags of the sandbox's class of its node, in each
// direction: after classRows in the table.
var nodeRows = append(nodeRowsOf(EgressCeiling), nodeRowsOf(IngressCeiling)...)

// nodeRowsOf returns the node flags of direction d.
func nodeRowsOf(d Ceiling) []Flag {
	n := nodeFlagNames[d]
	what, linux := "the node's uplink", "htb"
	if d == IngressCeiling {
		what, linux = "what the node receives", "htb (on ifb)"
	}
	return []Flag{
		{
			Name: n.path, Kind: KindText, field: func(c *Config) any { return c.nodeOf(d).path },
			Default: "", Unset: "no node: the sandbox's shaping is its own", Example: "/run/netqdisc/node.htb",
			Usage:      "node: the file of the node's class tree over " + what + ", in --qdisc-htb's words (class root classid 1:1 rate 10gbit; class parent 1:1 classid 1:10 rate 4gbit), the same for every sandbox of the node. The sandbox joins it as a class with --" + n.rate + " guaranteed, borrowing up to --" + n.ceil + " what the node's other sandboxes leave idle, as Linux's htb classes do. runsc starts the node's allocator (its socket: the file's path plus .sock), which admits each sandbox's class and gives it its share.",
			Annotation: Rule{Permit: OperatorOnly, Note: "the node's file is the operator's"},
			Linux:      Linux{Qdisc: linux, Param: "(node tree)"},
		},
		{
			Name: n.parent, Kind: KindText, field: func(c *Config) any { return c.nodeOf(d).parent },
			Default: "", Unset: "the tree's root class", Example: "1:10",
			Usage:      "node: the class of the node's tree the sandbox's class hangs from (a tenant's), tc's major:minor.",
			Annotation: Rule{Permit: OperatorOnly, Note: "the tenant is the operator's"},
			Linux:      Linux{Qdisc: linux, Param: "parent"},
		},
		{
			Name: n.rate, Kind: KindRate, field: func(c *Config) any { return c.nodeOf(d).rate },
			Default: "0", Unset: "unset; required with `--" + n.path + "`",
			Usage:      "node: the rate the sandbox's class is guaranteed (htb's rate); " + rateHelp + ". Required with --" + n.path + ".",
			Annotation: Rule{Permit: Lower, Note: "a pod may request less"},
			Linux:      Linux{Qdisc: linux, Param: "rate", Bound: "TCA_HTB_RATE64 is a u64"},
		},
		{
			Name: n.ceil, Kind: KindRate, field: func(c *Config) any { return c.nodeOf(d).ceil },
			Default: "0", Unset: "the parent's ceil",
			Usage:      "node: the most the sandbox's class may send, borrowing (htb's ceil); " + rateHelp + ".",
			Annotation: Rule{Permit: Lower, Note: "`kubernetes.io/" + map[Ceiling]string{EgressCeiling: "egress", IngressCeiling: "ingress"}[d] + "-bandwidth` sets it too"},
			Linux:      Linux{Qdisc: linux, Param: "ceil", Bound: "TCA_HTB_CEIL64 is a u64"},
		},
		{
			Name: n.prio, Kind: KindCount, Unit: "prio", field: func(c *Config) any { return c.nodeOf(d).prio },
			Default:    "0",
			Usage:      "node: the class's prio, 0 (borrows first) to 7.",
			Annotation: operatorOnly,
			Linux:      Linux{Qdisc: linux, Param: "prio", Max: htb.NumPrio - 1, Bound: "TC_HTB_NUMPRIO"},
		},
	}
}

// nodeNames are a direction's node flags' names.
type nodeNames struct{ path, parent, rate, ceil, prio string }

// nodeFlagNames are the node flags' names by direction.
var nodeFlagNames = map[Ceiling]nodeNames{
	EgressCeiling:  {FlagNode, FlagNodeParent, FlagNodeRate, FlagNodeCeil, FlagNodePrio},
	IngressCeiling: {FlagIngressNode, FlagIngressNodeParent, FlagIngressNodeRate, FlagIngressNodeCeil, FlagIngressNodePrio},
}
