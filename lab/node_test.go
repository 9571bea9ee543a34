package lab

import "testing"

// TestParseNetDev: each interface's received and transmitted bytes are
// read from /proc/net/dev, past its two lines of headings; a malformed
// count is an error.
func TestParseNetDev(t *testing.T) {
	const head = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
`
	for _, tc := range []struct {
		name    string
		text    string
		want    map[string]devBytes
		wantErr bool
	}{
		{"headings only", head, map[string]devBytes{}, false},
		{"two interfaces", head + `    lo:   19158     174    0    0    0     0          0         0    19158     174    0    0    0     0       0          0
nqm1a2b3c1: 987654321 652000    0    0    0     0          0         3     4242      60    0    0    0     0       0          0
`, map[string]devBytes{"lo": {19158, 19158, true}, "nqm1a2b3c1": {987654321, 4242, true}}, false},
		{"malformed", head + "  eth0: 12x 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseNetDev(tc.text)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseNetDev: error %v, want an error %t", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if len(got) != len(tc.want) {
				t.Errorf("parseNetDev = %v, want %v", got, tc.want)
			}
			for name, w := range tc.want {
				if got[name] != w {
					t.Errorf("parseNetDev: %s: %+v, want %+v", name, got[name], w)
				}
			}
		})
	}
}
