package e2e

import (
	"sync"
	"testing"
	"time"
)

// pinger is one of the pings pingAtOnce runs: warm sends the uncounted
// pings before, ping the counted ones (their RTTs and how many were
// sent), and name says which in an error.
type pinger struct {
	name string
	warm func() error
	ping func() ([]time.Duration, int, error)
}

// pingAtOnce warms each pinger, then runs their counted pings all at
// once, so that what else the machine does meanwhile falls on each alike,
// and returns each one's RTTs, none of which may be lost.
func pingAtOnce(t *testing.T, ps ...pinger) [][]time.Duration {
	t.Helper()
	for _, p := range ps {
		if err := p.warm(); err != nil {
			t.Fatal(err)
		}
	}
	rtts := make([][]time.Duration, len(ps))
	sent := make([]int, len(ps))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { rtts[i], sent[i], errs[i] = p.ping() })
	}
	wg.Wait()
	for i, p := range ps {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if len(rtts[i]) != sent[i] || sent[i] == 0 {
			t.Errorf("%s: %d of %d answered; want every one", p.name, len(rtts[i]), sent[i])
		}
	}
	return rtts
}
