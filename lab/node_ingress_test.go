package lab

import (
	"slices"
	"testing"
)

// TestParseAcked: ss's bytes_acked summed by destination, for the
// node's sandboxes' addresses and the sink's port only, less each SYN.
func TestParseAcked(t *testing.T) {
	hosts := []NodeHost{{Addr: "10.80.1.1"}, {Addr: "10.80.2.1"}}
	ss := `0      0      10.81.0.2:45678 10.80.1.1:5005
	 cubic wscale:7,7 rto:204 rtt:0.5/0.2 mss:1448 bytes_sent:2000 bytes_acked:1001 segs_out:5
0      0      10.81.0.2:45680 10.80.1.1:5005
	 cubic bytes_acked:2001 segs_out:5
0      0      10.81.0.2:45690 10.80.2.1:5005
	 cubic bytes_acked:501
0      0      10.81.0.2:45691 10.80.2.1:22
	 cubic bytes_acked:99999
0      0      10.81.0.2:45692 10.80.3.1:5005
	 cubic bytes_acked:99999
`
	got, err := parseAcked(ss, hosts, 5005)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{3000, 500}; !slices.Equal(got, want) {
		t.Errorf("parseAcked = %v, want %v", got, want)
	}
	if _, err := parseAcked("garbage\n", hosts, 5005); err == nil {
		t.Error("a line that is no connection: no error")
	}
}
