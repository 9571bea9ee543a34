package htb

// What a packet costs: psched_l2t_ns of its length in the rate and the
// ceil bucket (rate.Rate.TimeNS), charged for every packet to its leaf
// and every ancestor. A class remembers the costs of costSlots lengths,
// the last it was charged for in each slot, a length's slot fixed by a
// hash of it: a class whose packets come in a few lengths (full-size
// segments and their tails, ACKs) computes each length's costs once,
// however the lengths alternate, and looks them up inlined.

// costSlots is how many lengths a class remembers the costs of.
const costSlots = 4

// lenCost is a length and its costs in ns in the rate and the ceil
// bucket.
type lenCost struct {
	len            uint32
	rateNS, ceilNS int64
}

// costSlot is the slot of a length: the top two bits of a multiplicative
// (Fibonacci) hash, which put 54, 66, 1500 and 1514 (ACKs, full-size
// segments with and without their link header) in four slots. (costs
// has it written out, to stay inlined.)
func costSlot(bytes uint32) uint32 { return bytes * costHash >> 30 }

// costHash is 2^32 over the golden ratio.
const costHash = 0x9e3779b9

// costs returns what a packet of bytes bytes costs in ns in the rate and
// the ceil bucket (inlined when remembered), from its slot: valid until
// the class is asked for another length of that slot.
func (cl *class) costs(bytes uint32) *lenCost {
	c := &cl.cost[bytes*costHash>>30]
	if c.len != bytes {
		cl.remember(bytes)
	}
	return c
}

// remember computes the costs of a length, once when the ceil's rate is
// the rate's, into its slot.
func (cl *class) remember(bytes uint32) {
	rateNS := int64(cl.rate.TimeNS(bytes))
	ceilNS := rateNS
	if !cl.ceilIsRate {
		ceilNS = int64(cl.ceil.TimeNS(bytes))
	}
	cl.cost[costSlot(bytes)] = lenCost{bytes, rateNS, ceilNS}
}

// forgetCosts puts in every slot the costs of length 0 at the class's
// rates, as they are set: no slot keeps a cost of the rates before.
func (cl *class) forgetCosts() {
	zero := lenCost{0, int64(cl.rate.TimeNS(0)), int64(cl.ceil.TimeNS(0))}
	for i := range cl.cost {
		cl.cost[i] = zero
	}
}
