package fqcodel_test

import (
	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// newTBF returns a tbf on link whose child is fq_codel configured as fq
// (nil: the tbf's byte FIFO), as runsc-flags builds one.
func newTBF(link *qdisctest.Link, clock tcpip.Clock, cfg tbf.Config, fq *fqcodel.Config) (*tbf.Discipline, error) {
	if fq != nil {
		child, err := fqcodel.NewQueue(*fq, link.MTU()+uint32(link.MaxHeaderLength()), nil)
		if err != nil {
			return nil, err
		}
		cfg.Child = child
	}
	return tbf.New(link, clock, cfg)
}
