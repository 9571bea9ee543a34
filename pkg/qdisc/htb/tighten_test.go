package htb_test

import (
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// tightenOperator is the operator's tree the pods of TestTighten are held
// to: 1:10 (the cluster, 60mbit) and 1:20 (the rest, the default, 40mbit)
// share 1:1's 100mbit.
const tightenOperator = "qdisc default 20; " +
	"class root classid 1:1 rate 100mbit; " +
	"class parent 1:1 classid 1:10 rate 60mbit ceil 100mbit; " +
	"class parent 1:1 classid 1:20 rate 40mbit ceil 100mbit; " +
	"filter dst 10.0.0.0/8 classid 1:10"

// TestTighten holds pods' scripts to tightenOperator through htb's Kind
// (qdisc.Kind.Tighten, what a runtime reaches), and to the same result
// as Script.Tighten: accepted, the script that runs (a split's shares
// filled in); refused, an error naming what the pod asks past the
// operator, and no options.
func TestTighten(t *testing.T) {
	op, err := htb.ParseScript(tightenOperator)
	if err != nil {
		t.Fatalf("ParseScript(%q): %v", tightenOperator, err)
	}
	for _, tc := range []struct {
		name string
		pod  string // the operator's script with the pod's changes
		want string // the script that runs; "" if refused
		says []string
	}{
		{
			name: "the operator's own",
			pod:  tightenOperator,
			want: tightenOperator,
		},
		{
			name: "a lower ceil",
			pod:  strings.Replace(tightenOperator, "classid 1:10 rate 60mbit ceil 100mbit", "classid 1:10 rate 60mbit ceil 80mbit", 1),
			want: strings.Replace(tightenOperator, "classid 1:10 rate 60mbit ceil 100mbit", "classid 1:10 rate 60mbit ceil 80mbit", 1),
		},
		{
			name: "a higher rate",
			pod:  strings.Replace(tightenOperator, "classid 1:20 rate 40mbit", "classid 1:20 rate 50mbit", 1),
			says: []string{"class 1:20: rate 50Mbit is above the operator's 40Mbit"},
		},
		{
			// 40mbit and 30mbit under 1:10's 60mbit: htb would send
			// 70mbit from the children's own buckets.
			name: "a split past the parent's rate",
			pod: tightenOperator + "; class parent 1:10 classid 1:11 rate 40mbit; class parent 1:10 classid 1:12 rate 30mbit; " +
				"filter parent 1:10 dst 10.1.0.0/16 classid 1:11; filter parent 1:10 classid 1:12",
			says: []string{"the classes 1:11 and 1:12 under 1:10", "their rates add up to 70Mbit, above 1:10's 60Mbit"},
		},
		{
			// 1:10's burst and cburst, 1600 bytes each (60mbit and
			// 100mbit / 1e9 + 1600), split 2:1 by rate; 1:11 never
			// borrows (its cburst is its burst); both take 1:10's
			// quantum, 60mbit / r2q 10 held to 200000.
			name: "a split that fits",
			pod: tightenOperator + "; class parent 1:10 classid 1:11 rate 40mbit; class parent 1:10 classid 1:12 rate 20mbit ceil 60mbit; " +
				"filter parent 1:10 dst 10.1.0.0/16 classid 1:11; filter parent 1:10 classid 1:12",
			want: tightenOperator + "; class parent 1:10 classid 1:11 rate 40mbit burst 1066b cburst 1066b quantum 200000; " +
				"class parent 1:10 classid 1:12 rate 20mbit ceil 60mbit burst 533b cburst 533b quantum 200000; " +
				"filter parent 1:10 dst 10.1.0.0/16 classid 1:11; filter parent 1:10 classid 1:12",
		},
		{
			name: "another default",
			pod:  strings.Replace(tightenOperator, "qdisc default 20", "qdisc default 10", 1),
			says: []string{`qdisc "default 10"`, `the operator's, "default 20"`},
		},
		{
			name: "the operator's filter replaced",
			pod:  strings.Replace(tightenOperator, "filter dst 10.0.0.0/8 classid 1:10", "filter dst 0.0.0.0/0 classid 1:10", 1),
			says: []string{"filter dst 10.0.0.0/8 classid 1:10: the operator's filters stay"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, err := htb.ParseScript(tc.pod)
			if err != nil {
				t.Fatalf("ParseScript(%q): %v", tc.pod, err)
			}
			podBefore := pod.String()
			got, err := htb.Kind.Tighten(op, pod)
			direct, derr := op.Tighten(pod)
			if pod.String() != podBefore {
				t.Errorf("Tighten changed the pod's script it was given to %q", pod.String())
			}
			if tc.want == "" {
				if err == nil || got != nil {
					t.Fatalf("Kind.Tighten(%q) = %v, %v; want nil and an error saying %q", tc.pod, got, err, tc.says)
				}
				for _, s := range tc.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("Kind.Tighten(%q): %q; want it to say %q", tc.pod, err, s)
					}
				}
				if derr == nil || derr.Error() != err.Error() || direct.String() != "" {
					t.Errorf("Script.Tighten = %q, %v; want the Kind's error %v and the zero Script", direct, derr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Kind.Tighten(%q): %v; want it accepted", tc.pod, err)
			}
			want, err := htb.ParseScript(tc.want)
			if err != nil {
				t.Fatalf("ParseScript(%q): %v", tc.want, err)
			}
			s, ok := got.(htb.Script)
			if !ok {
				t.Fatalf("Kind.Tighten returned %T; want an htb.Script", got)
			}
			if s.String() != want.String() {
				t.Errorf("Kind.Tighten(%q) =\n%s\nwant\n%s", tc.pod, s, want)
			}
			if derr != nil || direct.String() != s.String() {
				t.Errorf("Script.Tighten = %q, %v; want the Kind's %q", direct, derr, s)
			}
		})
	}
}
