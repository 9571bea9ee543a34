package htbtest

import (
	"fmt"
	"slices"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// Throughput returns the bytes per second class (a leaf, or the handle for
// the direct queue) sent in [from, to): the bytes of its departures in
// that window over its length.
func Throughput(sent []Departure, class uint32, from, to int64) float64 {
	var bytes uint64
	for _, d := range sent {
		if d.Class == class && d.At >= from && d.At < to {
			bytes += uint64(d.Size)
		}
	}
	return float64(bytes) * 1e9 / float64(to-from)
}

// Saturate runs cfg through the model for dur ns from 0 with every busy
// leaf kept backlogged (a few packets of size(leaf) bytes queued), the
// others idle, and returns the bytes each leaf sent: sch_htb's shares
// under saturating load. Quotas, which Linux's htb lacks, are dropped.
func Saturate(cfg htb.Config, size func(uint32) uint32, dur int64, busy func(uint32) bool) (map[uint32]uint64, error) {
	cfg.Classes = slices.Clone(cfg.Classes)
	for i := range cfg.Classes {
		cfg.Classes[i].Quota = nil
	}
	m, err := NewModel(cfg, 0)
	if err != nil {
		return nil, err
	}
	var leaves []uint32
	for _, c := range cfg.Classes {
		if busy(c.ID) && !slices.ContainsFunc(cfg.Classes, func(k htb.ClassConfig) bool { return k.Parent == c.ID }) {
			leaves = append(leaves, c.ID)
		}
	}
	queued, bytes := map[uint32]int{}, map[uint32]uint64{}
	seq, seen := uint64(0), 0
	for now := int64(0); now < dur && len(leaves) > 0; {
		for range 100_000 {
			for _, l := range leaves {
				for ; queued[l] < 4; queued[l]++ {
					m.Enqueue(now, seq, l, size(l))
					seq++
				}
			}
			m.Dequeue(now)
			if len(m.Sent) == seen {
				break
			}
			for ; seen < len(m.Sent); seen++ {
				d := m.Sent[seen]
				queued[d.Class]--
				bytes[d.Class] += uint64(d.Size)
			}
		}
		if m.Watchdog <= now {
			return nil, fmt.Errorf("the model waits for %d at %d with every busy leaf backlogged", m.Watchdog, now)
		}
		now = m.Watchdog
	}
	return bytes, nil
}
