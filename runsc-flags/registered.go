package runscflags

// The qdiscs a runtime built with this package offers: each registers its
// Kind when imported (qdisc.Register), as a Linux qdisc is built in by a
// line of net/sched/Makefile. A new qdisc's package is one line here.
import (
	_ "github.com/netqdisc/netqdisc/pkg/qdisc/cake"
	_ "github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	_ "github.com/netqdisc/netqdisc/pkg/qdisc/fq"
	_ "github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	_ "github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	_ "github.com/netqdisc/netqdisc/pkg/qdisc/mmlink"
	_ "github.com/netqdisc/netqdisc/pkg/qdisc/netem"
	_ "github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)
