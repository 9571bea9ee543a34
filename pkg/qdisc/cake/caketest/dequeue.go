package caketest

import "math"

// Dequeue is cake_dequeue at now: the packet that leaves, or nil, and the
// COBALT drops and marks it made on the way (a packet delivered marked
// has a MarkCE event and its CE bits set, the IPv4 checksum updated).
// When it returns nil with packets queued, NextTime says when to call
// again. The qdisc core calls it until it returns nil after every
// enqueue and when the watchdog fires; so must the caller.
func (m *Model) Dequeue(now int64) (*Packet, []Event) {
	now = m.tick(now)
	var ev []Event
	firstFlow := true

begin:
	for {
		if m.qlen == 0 {
			return nil, ev
		}

		// The global hard shaper.
		if m.timeNextPacket > now && m.failsafeNextPacket > now {
			m.overlimits++
			m.schedule(min(m.timeNextPacket, m.failsafeNextPacket))
			return nil, ev
		}

		// Choose a tin.
		if m.rateNS == 0 {
			// Unlimited: DRR over the tins by their quanta.
			wrapped, empty := false, true
			for {
				b := m.tins[m.curTin]
				active := b.sparseFlowCount + b.bulkFlowCount
				if !(b.tinDeficit < 0 || active == 0) {
					break
				}
				if b.tinDeficit <= 0 {
					b.tinDeficit += int32(b.tinQuantum)
				}
				if active != 0 {
					empty = false
				}
				m.curTin++
				if m.curTin >= m.tinCnt {
					m.curTin = 0
					if wrapped {
						if empty {
							return nil, ev
						}
					} else {
						wrapped = true
					}
				}
			}
		} else {
			// Shaped: the last tin (in index order) whose schedule is
			// due, else the one due soonest (the last of equals).
			bestTime := int64(math.MaxInt64)
			bestTin := 0
			for t := 0; t < m.tinCnt; t++ {
				b := m.tins[t]
				if b.sparseFlowCount+b.bulkFlowCount > 0 {
					toPkt := b.timeNextPacket - now
					if toPkt <= 0 || toPkt <= bestTime {
						bestTime = toPkt
						bestTin = t
					}
				}
			}
			m.curTin = bestTin
			if b := m.tins[bestTin]; b.sparseFlowCount+b.bulkFlowCount == 0 {
				return nil, ev
			}
		}

	retry:
		for {
			b := m.tins[m.curTin]
			// Serve the decaying flows first (once per dequeue), then
			// new, then old, then decaying.
			head := b.decayingFlows
			if !firstFlow || len(head) == 0 {
				head = b.newFlows
				if len(head) == 0 {
					head = b.oldFlows
					if len(head) == 0 {
						head = b.decayingFlows
						if len(head) == 0 {
							continue begin
						}
					}
				}
			}
			fi := head[0]
			m.curFlow = int(fi)
			firstFlow = false
			f := &b.flows[fi]

			// DRR++: a flow out of deficit gets a quantum and goes to
			// the back of the old flows; a sparse one becomes bulk if it
			// still has packets.
			if f.deficit <= 0 {
				if f.set == setSparse {
					if len(f.queue) != 0 {
						b.sparseFlowCount--
						b.bulkFlowCount++
						b.incSrcBulk(f, m.p.FlowMode)
						b.incDstBulk(f, m.p.FlowMode)
						f.set = setBulk
					} else {
						// In the bulk rotation for the deficit, still
						// counted sparse.
						f.set = setSparseWait
					}
				}
				f.deficit += int32(m.flowQuantumFor(b, f))
				b.listMoveTail(fi, onOld)
				continue retry
			}

			// A packet through the AQM.
			var e entry
			for {
				var ok bool
				e, ok = m.dequeueOne()
				if !ok {
					// The queue was empty.
					if f.cvars.queueEmpty(&b.cparams, now) {
						b.unresponsiveFlowCount--
					}
					if f.cvars.pDrop != 0 || f.cvars.count != 0 || now < f.cvars.dropNext {
						// Keep it until COBALT is at rest.
						b.listMoveTail(fi, onDecaying)
						switch f.set {
						case setBulk:
							b.bulkFlowCount--
							b.decSrcBulk(f, m.p.FlowMode)
							b.decDstBulk(f, m.p.FlowMode)
							b.decayingFlowCount++
						case setSparse, setSparseWait:
							b.sparseFlowCount--
							b.decayingFlowCount++
						}
						f.set = setDecaying
					} else {
						b.listDel(fi)
						switch f.set {
						case setSparse, setSparseWait:
							b.sparseFlowCount--
						case setBulk:
							b.bulkFlowCount--
							b.decSrcBulk(f, m.p.FlowMode)
							b.decDstBulk(f, m.p.FlowMode)
						default:
							b.decayingFlowCount--
						}
						f.set = setNone
					}
					continue begin
				}

				bulk := uint32(0)
				if m.p.Ingress {
					bulk = uint32(b.bulkFlowCount)
				}
				v := f.cvars.shouldDrop(&b.cparams, now, &e, bulk, m.p.Rand)
				if f.cvars.ecnMarked {
					ev = append(ev, m.event(MarkCE, now, &e))
				}
				// The last packet of a queue may be marked, never dropped.
				if !v.drop || len(f.queue) == 0 {
					break
				}
				if m.p.Ingress {
					n := m.advanceShaper(b, &e, now, true)
					f.deficit -= int32(n)
					b.tinDeficit -= int32(n)
				}
				f.dropped++
				b.tinDropped++
				m.drops++
				kind := DropCoDel
				if v.blue && !v.codel {
					kind = DropBlue
				}
				ev = append(ev, m.event(kind, now, &e))
				if m.p.Ingress {
					continue retry
				}
			}

			if f.cvars.ecnMarked {
				b.tinECNMark++
			}
			m.bytes += uint64(e.pktLen)
			if e.pkt.isGSO() {
				m.packets += uint64(e.pkt.gsoSegs())
			} else {
				m.packets++
			}

			delay := uint64(now - e.enqueueTime)
			b.avgeDelay = ewma(b.avgeDelay, delay, 8)
			shift := uint(8)
			if delay > b.peakDelay {
				shift = 2
			}
			b.peakDelay = ewma(b.peakDelay, delay, shift)
			shift = 8
			if delay < b.baseDelay {
				shift = 2
			}
			b.baseDelay = ewma(b.baseDelay, delay, shift)

			n := m.advanceShaper(b, &e, now, false)
			f.deficit -= int32(n)
			b.tinDeficit -= int32(n)

			if m.timeNextPacket > now && m.qlen != 0 {
				m.schedule(min(m.timeNextPacket, m.failsafeNextPacket))
			} else if m.qlen == 0 {
				for i := 0; i < m.tinCnt; i++ {
					if m.tins[i].decayingFlowCount != 0 {
						m.schedule(now + int64(m.tins[i].cparams.target))
						break
					}
				}
			}
			if m.overflowTimeout != 0 {
				m.overflowTimeout--
			}
			p := e.pkt
			return &p, ev
		}
	}
}

// event is an Event about queued entry e of the current tin and queue.
func (m *Model) event(k EventKind, now int64, e *entry) Event {
	return Event{Kind: k, At: now, ID: e.pkt.ID, Seg: e.pkt.Seg, Tin: m.curTin, Queue: m.curFlow, Len: e.pktLen}
}

// DequeueAll calls Dequeue at now until it returns nil, as the qdisc core
// does, and returns the packets and events in order.
func (m *Model) DequeueAll(now int64) ([]Packet, []Event) {
	var out []Packet
	var evs []Event
	for {
		p, ev := m.Dequeue(now)
		evs = append(evs, ev...)
		if p == nil {
			return out, evs
		}
		out = append(out, *p)
	}
}
