package caketest

// The DSCP-to-tin tables of sch_cake.c (precedence, diffserv8, diffserv4,
// diffserv3, besteffort), indexed by the 6-bit DSCP.
var (
	precedenceTable = [64]uint8{
		0, 0, 0, 0, 0, 0, 0, 0,
		1, 1, 1, 1, 1, 1, 1, 1,
		2, 2, 2, 2, 2, 2, 2, 2,
		3, 3, 3, 3, 3, 3, 3, 3,
		4, 4, 4, 4, 4, 4, 4, 4,
		5, 5, 5, 5, 5, 5, 5, 5,
		6, 6, 6, 6, 6, 6, 6, 6,
		7, 7, 7, 7, 7, 7, 7, 7,
	}
	diffserv8Table = [64]uint8{
		2, 0, 1, 2, 4, 2, 2, 2,
		1, 2, 1, 2, 1, 2, 1, 2,
		5, 2, 4, 2, 4, 2, 4, 2,
		3, 2, 3, 2, 3, 2, 3, 2,
		6, 2, 3, 2, 3, 2, 3, 2,
		6, 2, 2, 2, 6, 2, 6, 2,
		7, 2, 2, 2, 2, 2, 2, 2,
		7, 2, 2, 2, 2, 2, 2, 2,
	}
	diffserv4Table = [64]uint8{
		0, 1, 0, 0, 2, 0, 0, 0,
		1, 0, 0, 0, 0, 0, 0, 0,
		2, 0, 2, 0, 2, 0, 2, 0,
		2, 0, 2, 0, 2, 0, 2, 0,
		3, 0, 2, 0, 2, 0, 2, 0,
		3, 0, 0, 0, 3, 0, 3, 0,
		3, 0, 0, 0, 0, 0, 0, 0,
		3, 0, 0, 0, 0, 0, 0, 0,
	}
	diffserv3Table = [64]uint8{
		0, 1, 0, 0, 2, 0, 0, 0,
		1, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 2, 0, 2, 0,
		2, 0, 0, 0, 0, 0, 0, 0,
		2, 0, 0, 0, 0, 0, 0, 0,
	}
	besteffortTable = [64]uint8{}
)

// The tin orders for the stats dump (tc -s shows tins in this order):
// normal for besteffort, precedence and diffserv8, bulk (tin 1, the
// background tin, first) for diffserv3 and diffserv4.
var (
	normalOrder = []uint8{0, 1, 2, 3, 4, 5, 6, 7}
	bulkOrder   = []uint8{1, 0, 2, 3}
)

// setRate is cake_set_rate: tin b's rate_ns and rate_shft (time per byte
// as rate_ns/2^rate_shft ns, the largest shift that keeps rate_ns below
// 2^34), its flow quantum (rate/4096 within [300, 1514], 1514 when
// unlimited), and COBALT's target (at least 1.5 MTU times), interval and
// mtu_time.
func (b *tin) setRate(rate uint64, mtu uint32, targetNS, rttNS uint64) {
	const minRate = 64
	var shft uint16
	var rateNS uint64
	b.flowQuantum = 1514
	if rate != 0 {
		b.flowQuantum = uint16(max(min(rate>>12, 1514), 300))
		shft = 34
		rateNS = (uint64(1e9) << shft) / max(minRate, rate)
		for rateNS>>34 != 0 {
			rateNS >>= 1
			shft--
		}
	}
	b.rateBps = rate
	b.rateNS = rateNS
	b.rateShft = shft

	byteTargetNS := (uint64(mtu) * rateNS) >> shft
	b.cparams.target = max(byteTargetNS*3/2, targetNS)
	b.cparams.interval = max(rttNS+b.cparams.target-targetNS, b.cparams.target*2)
	b.cparams.mtuTime = byteTargetNS
	b.cparams.pInc = 1 << 24 // 1/256
	b.cparams.pDec = 1 << 20 // 1/4096
}

// configTins is cake_config_besteffort, _precedence, _diffserv8,
// _diffserv4 and _diffserv3: the tin count, tables, and each tin's rate
// and DRR quantum. It returns the tin whose rate is the qdisc's (0).
func (m *Model) configTins() int {
	rate := m.rateBps
	mtu := m.p.MTU
	target := uint64(m.p.Target) * 1000
	interval := uint64(m.p.Interval) * 1000
	switch m.p.TinMode {
	case BestEffort:
		m.tinCnt = 1
		m.tinIndex = &besteffortTable
		m.tinOrder = normalOrder
		m.tins[0].setRate(rate, mtu, target, interval)
		m.tins[0].tinQuantum = 65535
	case Precedence, Diffserv8:
		m.tinCnt = 8
		m.tinIndex = &precedenceTable
		if m.p.TinMode == Diffserv8 {
			m.tinIndex = &diffserv8Table
		}
		m.tinOrder = normalOrder
		quantum := uint32(256)
		for i := 0; i < m.tinCnt; i++ {
			m.tins[i].setRate(rate, mtu, target, interval)
			m.tins[i].tinQuantum = max(uint16(quantum), 1)
			// Each next tin: 7/8 of the rate and of the quantum.
			rate *= 7
			rate >>= 3
			quantum *= 7
			quantum >>= 3
		}
	case Diffserv4:
		const quantum = 1024
		m.tinCnt = 4
		m.tinIndex = &diffserv4Table
		m.tinOrder = bulkOrder
		m.tins[0].setRate(rate, mtu, target, interval)
		m.tins[1].setRate(rate>>4, mtu, target, interval)
		m.tins[2].setRate(rate>>1, mtu, target, interval)
		m.tins[3].setRate(rate>>2, mtu, target, interval)
		m.tins[0].tinQuantum = quantum
		m.tins[1].tinQuantum = quantum >> 4
		m.tins[2].tinQuantum = quantum >> 1
		m.tins[3].tinQuantum = quantum >> 2
	default: // Diffserv3
		const quantum = 1024
		m.tinCnt = 3
		m.tinIndex = &diffserv3Table
		m.tinOrder = bulkOrder
		m.tins[0].setRate(rate, mtu, target, interval)
		m.tins[1].setRate(rate>>4, mtu, target, interval)
		m.tins[2].setRate(rate>>2, mtu, target, interval)
		m.tins[0].tinQuantum = quantum
		m.tins[1].tinQuantum = quantum >> 4
		m.tins[2].tinQuantum = quantum >> 2
	}
	return 0
}

// reconfigure is cake_reconfigure: the tins, the qdisc's rate (tin 0's),
// and the buffer limit: Memory if set, else rate*interval/250000 (four
// intervals' worth of bytes, at least 4 MiB) when shaped, unbounded when
// not; then at most limit*MTU unless Memory says more.
func (m *Model) reconfigure() {
	ft := m.configTins()
	for c := m.tinCnt; c < maxTins; c++ {
		m.clearTin(c)
		m.tins[c].cparams.mtuTime = m.tins[ft].cparams.mtuTime
	}
	m.rateNS = m.tins[ft].rateNS
	m.rateShft = m.tins[ft].rateShft

	switch {
	case m.p.Memory != 0:
		m.bufferLimit = m.p.Memory
	case m.rateBps != 0:
		t := m.rateBps * uint64(m.p.Interval)
		t /= 1000000 / 4
		m.bufferLimit = max(uint32(t), 4<<20) // max_t(u32, ...) truncates t
	default:
		m.bufferLimit = ^uint32(0)
	}
	m.bufferLimit = min(m.bufferLimit, max(m.p.Limit*m.p.MTU, m.p.Memory))
}
