package fqcodel

import (
	"github.com/netqdisc/netqdisc/pkg/qdisc/codel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// PeekedSeq is the sequence number of the packet Peek holds.
func (q *Scheduler) PeekedSeq() uint64 { return qdisctest.Seq(q.peeked.pkt) }

// MarkCE is markCE, for the header tests.
var MarkCE = markCE

// CoDelParams returns the CoDel parameters the queue's flows run with.
func (q *Scheduler) CoDelParams() codel.Params { return q.params }
