package qdisc

import "testing"

func TestStatsString(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Stats
		want string
	}{
		{
			name: "tc example",
			s:    Stats{Bytes: 3000, Packets: 3, Overlimits: 1, BacklogBytes: 2000, BacklogPackets: 2},
			want: "Sent 3000 bytes 3 pkt (dropped 0, overlimits 1 requeues 0)\n backlog 2000b 2p requeues 0",
		},
		{
			name: "zero",
			want: "Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\n backlog 0b 0p requeues 0",
		},
		{
			name: "large backlog in tc's units",
			s:    Stats{Bytes: 1 << 40, Packets: 7, Drops: 5, BacklogBytes: 10240, BacklogPackets: 10},
			want: "Sent 1099511627776 bytes 7 pkt (dropped 5, overlimits 0 requeues 0)\n backlog 10Kb 10p requeues 0",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.String(); got != tc.want {
				t.Errorf("String() =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestStatsAdd(t *testing.T) {
	a := Stats{1, 2, 3, 4, 5, 6, 7}
	b := Stats{10, 20, 30, 40, 50, 60, 70}
	if got, want := a.Add(b), (Stats{11, 22, 33, 44, 55, 66, 77}); got != want {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
}
