package runscflags

import (
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// help is f's help text, as RegisterQDiscFlags registers it: its Usage
// and, for the flags that choose a kind (--qdisc, --qdisc-ingress), the
// kinds registered when it is asked for (qdisc.Kinds), each with the
// flag of its words in that direction, so that a kind any package
// registers is in the help as it is in the flags.
func (f *Flag) help() string {
	switch f.Kind {
	case KindQDisc:
		return f.Usage + " Choose " + orList(qdiscChoices()) + ". " + kindsHelp(EgressCeiling)
	case KindName:
		return f.Usage + " " + kindsHelp(IngressCeiling)
	}
	return f.Usage
}

// kindsHelp says, for direction d, which flag holds each registered
// kind's settings: its words flag (kindFlagName), "cake (--qdisc-cake),
// fifo (--qdisc-fifo), ...".
func kindsHelp(d Ceiling) string {
	var each []string
	for _, k := range qdisc.Kinds() {
		each = append(each, fmt.Sprintf("%s (--%s)", k.Name, kindFlagName(d, k.Name)))
	}
	return "Each kind's settings are its words flag's, in tc's words: " + strings.Join(each, ", ") + "."
}
