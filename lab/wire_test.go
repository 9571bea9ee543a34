package lab

import "testing"

// TestParseDelivered: the bytes acknowledged and the segments delivered
// are summed over ss -tin's connections; other fields, bytes_received and
// delivery_rate among them, are not counted; a malformed count is an
// error.
func TestParseDelivered(t *testing.T) {
	for _, tc := range []struct {
		name             string
		out              string
		acked, delivered uint64
		wantErr          bool
	}{
		{"none", "", 0, 0, false},
		{"two connections", `ESTAB 0 0 10.77.0.2:41234 10.77.0.1:5001
	 ts sack cubic wscale:7,7 rto:204 mss:1448 bytes_sent:2000 bytes_acked:1449 bytes_received:0 segs_out:3 delivered:2 delivery_rate:1000bps
ESTAB 0 0 10.77.0.2:41236 10.77.0.1:5001
	 ts sack cubic bytes_acked:100001 delivered:70 app_limited
`, 1449 + 100001, 2 + 70, false},
		{"malformed", "bytes_acked:12x delivered:1", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acked, delivered, err := parseDelivered(tc.out)
			if (err != nil) != tc.wantErr || acked != tc.acked || delivered != tc.delivered {
				t.Errorf("parseDelivered = %d, %d, %v; want %d, %d, error %t", acked, delivered, err, tc.acked, tc.delivered, tc.wantErr)
			}
		})
	}
}
