package cake

// Tins: how cake sorts packets into tins by their DSCP, and the rate,
// share and COBALT tuning of each tin (cake_config_* and cake_set_rate).

// maxTins is the most tins a mode has (CAKE_MAX_TINS).
const maxTins = 8

// dscpTins maps each of the 64 DSCPs to a tin, per mode. The tables are
// Linux's (sch_cake.c's precedence, diffserv8, diffserv4, diffserv3 and
// besteffort), written out by codepoint group.
var dscpTins = [numDiffserv][64]uint8{
	Diffserv3:  tinTable(map[uint8]uint8{1: 1, 4: 2, 8: 1, 44: 2, 46: 2, 48: 2, 56: 2}, 0),
	Diffserv4:  diffserv4Table(),
	Diffserv8:  diffserv8Table(),
	BestEffort: {},
	Precedence: precedenceTable(),
}

// tinTable returns a table that maps every DSCP to def but those in m.
func tinTable(m map[uint8]uint8, def uint8) [64]uint8 {
	var t [64]uint8
	for i := range t {
		t[i] = def
		if v, ok := m[uint8(i)]; ok {
			t[i] = v
		}
	}
	return t
}

// precedenceTable: the tin is the DSCP's three precedence bits.
func precedenceTable() [64]uint8 {
	var t [64]uint8
	for i := range t {
		t[i] = uint8(i >> 3)
	}
	return t
}

// diffserv4Table: bulk (0: best effort, AF1x, TOS2 and the rest), 1
// (LE, CS1: background), 2 (streaming: AF4x, AF3x, CS3, AF2x, TOS4, CS2),
// 3 (latency sensitive: CS7, CS6, EF, VA, CS5, CS4).
func diffserv4Table() [64]uint8 {
	m := map[uint8]uint8{1: 1, 8: 1, 4: 2, 16: 2, 18: 2, 20: 2, 22: 2, 24: 2, 26: 2, 28: 2, 30: 2, 34: 2, 36: 2, 38: 2,
		32: 3, 40: 3, 44: 3, 46: 3, 48: 3, 56: 3}
	return tinTable(m, 0)
}

// diffserv8Table: Linux's eight classes, best effort (2) by default.
func diffserv8Table() [64]uint8 {
	m := map[uint8]uint8{1: 0, 2: 1, 8: 1, 10: 1, 12: 1, 14: 1, 4: 4, 18: 4, 20: 4, 22: 4, 16: 5,
		24: 3, 26: 3, 28: 3, 30: 3, 34: 3, 36: 3, 38: 3, 32: 6, 40: 6, 44: 6, 46: 6, 48: 7, 56: 7}
	return tinTable(m, 2)
}

// tinCount is the number of tins of each mode.
var tinCount = [numDiffserv]int{Diffserv3: 3, Diffserv4: 4, Diffserv8: 8, BestEffort: 1, Precedence: 8}

// tinOrder is the order tc shows the tins in (Linux's tin_order: bulk
// first for diffserv3 and diffserv4).
var tinOrder = [numDiffserv][]uint8{
	Diffserv3:  {1, 0, 2},
	Diffserv4:  {1, 0, 2, 3},
	Diffserv8:  {0, 1, 2, 3, 4, 5, 6, 7},
	BestEffort: {0},
	Precedence: {0, 1, 2, 3, 4, 5, 6, 7},
}

// tinShares returns, for mode and the base rate, each tin's rate and DRR
// quantum (its share when unlimited), as cake_config_* sets them.
func tinShares(mode Diffserv, rate uint64) (rates [maxTins]uint64, quanta [maxTins]uint16) {
	switch mode {
	case BestEffort:
		rates[0], quanta[0] = rate, 65535
	case Precedence, Diffserv8:
		q := uint32(256)
		for i := range maxTins {
			rates[i], quanta[i] = rate, uint16(max(q, 1))
			rate = rate * 7 >> 3
			q = q * 7 >> 3
		}
	case Diffserv4:
		for i, s := range [4]uint{0, 4, 1, 2} {
			rates[i], quanta[i] = rate>>s, uint16(1024>>s)
		}
	default: // Diffserv3
		for i, s := range [3]uint{0, 4, 2} {
			rates[i], quanta[i] = rate>>s, uint16(1024>>s)
		}
	}
	return rates, quanta
}

// minRate is cake_set_rate's least rate, in bytes/s.
const minRate = 64

// setRate is cake_set_rate: tin b's time per byte (ns << shift) at rate
// bytes/s (0: unlimited), its flow quantum, and COBALT's parameters for a
// link whose MTU plus header is mtu, with the configured target and rtt
// (ns).
func (b *tin) setRate(rate uint64, mtu uint32, target, rtt uint64) {
	b.flowQuantum = 1514
	var rateNS uint64
	var shift uint8
	if rate != 0 {
		b.flowQuantum = uint16(max(min(rate>>12, 1514), 300))
		shift = 34
		rateNS = (uint64(1e9) << shift) / max(rate, minRate)
		for rateNS>>34 != 0 {
			rateNS >>= 1
			shift--
		}
	}
	b.rateBps, b.rateNS, b.rateShift = rate, rateNS, shift
	mtuTime := uint64(mtu) * rateNS >> shift
	b.cp.target = max(mtuTime*3/2, target)
	b.cp.interval = max(rtt+b.cp.target-target, b.cp.target*2)
	b.cp.mtuTime = mtuTime
	b.cp.pInc = 1 << 24
	b.cp.pDec = 1 << 20
}
