package lab

import (
	"slices"
	"testing"
)

// TestParseReceived: ss's bytes_received summed by local address, for
// the node's peer addresses and the sink's port only; a line that is no
// connection is an error.
func TestParseReceived(t *testing.T) {
	hosts := []NodeHost{{PeerAddr: "10.81.0.11"}, {PeerAddr: "10.81.0.12"}}
	for _, tc := range []struct {
		name    string
		ss      string
		want    []uint64
		wantErr bool
	}{
		{"none", "", []uint64{0, 0}, false},
		{"by peer address", `0      0      10.81.0.11:5003 10.80.1.1:45678
	 cubic wscale:7,7 rto:204 rtt:0.5/0.2 mss:1448 bytes_acked:1 bytes_received:1000 segs_in:5
0      0      10.81.0.11:5003 10.80.1.1:45680
	 cubic bytes_received:2000 segs_in:5
0      0      10.81.0.12:5003 10.80.2.1:45690
	 cubic bytes_received:500
0      0      10.81.0.12:22 10.80.2.1:45691
	 cubic bytes_received:99999
0      0      10.81.0.13:5003 10.80.3.1:45692
	 cubic bytes_received:99999
0      0      10.81.0.2:45693 10.80.1.1:5003
	 cubic bytes_received:99999
`, []uint64{3000, 500}, false},
		{"no connection", "garbage\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseReceived(tc.ss, hosts, 5003)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseReceived: error %v, want an error %t", err, tc.wantErr)
			}
			if !tc.wantErr && !slices.Equal(got, tc.want) {
				t.Errorf("parseReceived = %v, want %v", got, tc.want)
			}
		})
	}
}
