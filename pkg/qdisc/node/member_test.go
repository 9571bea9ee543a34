package node

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// members joins the issue's three sandboxes (10, 20 and 30 Mbit/s, ceil
// 100, at prios p) on a board of the issue's tree, as of now.
func members(t *testing.T, p [3]uint8, now int64) []*Member {
	t.Helper()
	b, _ := newBoard(t, 4, issueTree)
	var ms []*Member
	for i, rate := range []uint64{10, 20, 30} {
		c := sandbox(uint32(rate), rate, 100, p[i])
		slot, err := b.Join(c, uint64(i+1), now, int64(Stale))
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewMember(b, slot, uint64(i+1), c)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

// run steps the members every Period from *now for d: each sends what
// its last share let it (busy ones all of it, idle ones nothing, dead
// ones do not publish), and returns their last shares in Mbit/s.
func run(t *testing.T, ms []*Member, now *int64, d time.Duration, busy, dead []bool, sent []uint64) []float64 {
	t.Helper()
	shares := make([]float64, len(ms))
	for end := *now + int64(d); *now < end; *now += int64(Period) {
		for i, m := range ms {
			if dead[i] {
				continue
			}
			s, err := m.Share(*now, Counters{Bytes: sent[i], Packets: sent[i] / 1500, Busy: busy[i]})
			if err != nil {
				t.Fatal(err)
			}
			if busy[i] {
				sent[i] += s * uint64(Period) / uint64(time.Second)
			}
			shares[i] = float64(s) / mbit
		}
	}
	return shares
}

// TestMemberShares: three sandboxes of the issue's node, each computing
// its own share from the board: all busy, they get htb's shares (the
// rates, then the excess by quantum), in all no more than the root;
// when one goes idle, the others take its share within 100 ms; when one
// is killed (it stops publishing) they take it within Stale, under 1 s;
// two prios give the excess to the first.
func TestMemberShares(t *testing.T) {
	allBusy := []float64{10 + 40*5.0/21, 20 + 40*8.0/21, 30 + 40*8.0/21}
	near := func(got, want []float64) bool {
		for i := range got {
			if math.Abs(got[i]-want[i]) > 0.01 {
				return false
			}
		}
		return true
	}
	sum := func(s []float64) (t float64) {
		for _, v := range s {
			t += v
		}
		return t
	}
	t.Run("idle", func(t *testing.T) {
		now := int64(time.Second)
		ms := members(t, [3]uint8{}, now)
		sent := make([]uint64, 3)
		got := run(t, ms, &now, time.Second, []bool{true, true, true}, []bool{false, false, false}, sent)
		if !near(got, allBusy) || sum(got) > 100.001 {
			t.Errorf("all busy: %v Mbit/s, want %v", got, allBusy)
		}
		got = run(t, ms, &now, 100*time.Millisecond, []bool{false, true, true}, []bool{false, false, false}, sent)
		if want := []float64{10, 45, 55}; !near(got[1:], want[1:]) {
			t.Errorf("100 ms after 1:10 went idle: %v Mbit/s, want %v (1:10 keeps its rate)", got, want)
		}
	})
	t.Run("killed", func(t *testing.T) {
		now := int64(time.Second)
		ms := members(t, [3]uint8{}, now)
		sent := make([]uint64, 3)
		run(t, ms, &now, time.Second, []bool{true, true, true}, []bool{false, false, false}, sent)
		got := run(t, ms, &now, Stale-2*Period, []bool{true, true, true}, []bool{false, false, true}, sent)
		if !near(got[:2], allBusy[:2]) {
			t.Errorf("just after 1:30 died, before Stale: %v, want its guarantee held %v", got[:2], allBusy[:2])
		}
		got = run(t, ms, &now, time.Second-Stale, []bool{true, true, true}, []bool{false, false, true}, sent)
		if want := []float64{10 + 70*5.0/13, 20 + 70*8.0/13}; !near(got[:2], want) {
			t.Errorf("1 s after 1:30 died: %v Mbit/s, want %v", got[:2], want)
		}
	})
	t.Run("prios", func(t *testing.T) {
		now := int64(time.Second)
		ms := members(t, [3]uint8{1, 1, 0}, now)
		got := run(t, ms, &now, time.Second, []bool{true, true, true}, []bool{false, false, false}, make([]uint64, 3))
		if want := []float64{10, 20, 70}; !near(got, want) {
			t.Errorf("1:30 at prio 0: %v Mbit/s, want %v", got, want)
		}
	})
	t.Run("light", func(t *testing.T) {
		// 1:10 sends 5 Mbit/s without waiting: it keeps room for a
		// sixteenth more, the rest goes to the busy ones.
		now := int64(time.Second)
		ms := members(t, [3]uint8{}, now)
		sent := make([]uint64, 3)
		var got []float64
		for end := now + int64(time.Second); now < end; now += int64(Period) {
			sent[0] += 5 * mbit * uint64(Period) / uint64(time.Second)
			got = run(t, ms[1:], &now, Period, []bool{true, true}, []bool{false, false}, sent[1:])
			now -= int64(Period)
			if _, err := ms[0].Share(now, Counters{Bytes: sent[0]}); err != nil {
				t.Fatal(err)
			}
		}
		if want := []float64{20 + (50-5*17.0/16)/2, 30 + (50-5*17.0/16)/2}; !near(got, want) {
			t.Errorf("beside a sandbox sending 5 Mbit/s: %v, want %v", got, want)
		}
	})
}

// TestShow: the node as `tc -s class show` prints an htb's: the root,
// then each live sandbox's class with what it sent, split as lended
// (within its rate) and borrowed, its tokens; the root's counters are
// its sandboxes' sums, and it lends what they borrowed.
func TestShow(t *testing.T) {
	now := int64(time.Second)
	ms := members(t, [3]uint8{}, now)
	sent := make([]uint64, 3)
	run(t, ms, &now, time.Second, []bool{true, true, true}, []bool{false, false, false}, sent)
	for i, m := range ms { // publish the last period's counters too
		if _, err := m.Share(now, Counters{Bytes: sent[i], Packets: sent[i] / 1500, Busy: true}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ms[0].board.Show(now)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", got)
	var total uint64
	for _, s := range sent {
		total += s
	}
	for _, want := range []string{
		"class htb 1:1 root rate 100Mbit ceil 100Mbit burst 1600b cburst 1600b\n Sent " + fmt.Sprint(total) + " bytes",
		"class htb 1:a parent 1:1 prio 0 rate 10Mbit ceil 100Mbit burst 1600b cburst 1600b\n Sent " + fmt.Sprint(sent[0]) + " bytes " + fmt.Sprint(sent[0]/1500) + " pkt",
		"class htb 1:1e parent 1:1 prio 0 rate 30Mbit ceil 100Mbit",
		" lended: ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Show() lacks %q", want)
		}
	}
	// 1:a sent at 19.5 Mbit/s on a rate of 10: about half of its packets
	// were borrowed.
	var lended, borrowed uint64
	if _, err := fmt.Sscanf(got[strings.Index(got, "class htb 1:a "):][strings.Index(got[strings.Index(got, "class htb 1:a "):], " lended:"):], " lended: %d borrowed: %d", &lended, &borrowed); err != nil {
		t.Fatal(err)
	}
	if r := float64(borrowed) / float64(lended+borrowed); r < 0.45 || r > 0.55 {
		t.Errorf("1:a lended %d borrowed %d packets: %.2f borrowed, want about 0.49 (9.5 of 19.5 Mbit/s)", lended, borrowed, r)
	}
}
