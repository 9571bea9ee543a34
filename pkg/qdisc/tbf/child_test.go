package tbf_test

import (
	"fmt"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
)

// fqChild returns an fq_codel child configured as fq, for a tbf on a link
// of 1500 bytes' MTU and a 14-byte header. The tests give valid settings:
// an invalid one panics, failing the test.
func fqChild(fq fqcodel.Config) *fqcodel.Queue {
	q, err := fqcodel.NewQueue(fq, 1514, nil)
	if err != nil {
		panic(fmt.Sprintf("fqcodel.NewQueue(%+v): %v", fq, err))
	}
	return q
}
