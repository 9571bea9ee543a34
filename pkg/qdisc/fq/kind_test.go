package fq_test

import (
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fq"
)

// TestKindQueue: fq grafted under a shaper (Kind.Queue, a tbf's default
// child) is an fq queue with the options given, its quantum twice the
// link's frame by default, as Linux's fq_init sets it; options fq
// refuses are the error.
func TestKindQueue(t *testing.T) {
	q, err := fq.Kind.Queue(fq.Options{FlowLimit: 50}, 1514)
	if err != nil {
		t.Fatal(err)
	}
	fqq, ok := q.(*fq.Queue)
	if !ok {
		t.Fatalf("Queue = %T; want an *fq.Queue", q)
	}
	if c := fqq.Config(); c.FlowLimit != 50 || c.Quantum != 2*1514 {
		t.Errorf("the child's Config is %+v; want flow_limit 50 and quantum %d", c, 2*1514)
	}
	if _, err := fq.Kind.Queue(fq.Options{Quantum: 1 << 30}, 1514); err == nil {
		t.Error("Queue with a quantum of 1 GiB was built; want an error")
	}
}
