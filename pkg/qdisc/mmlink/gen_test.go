package mmlink_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink"
	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink/tracegen"
)

// TestGeneratedTraces: testdata's traces are what the generator makes,
// byte for byte (`go generate ./pkg/qdisc/mmlink/` writes them), the
// built-ins of their names are the same traces, and each has the
// opportunities, period and mean rate its model's doc (and
// docs/mmlink.md) says.
func TestGeneratedTraces(t *testing.T) {
	for _, tc := range []struct {
		model         tracegen.Model
		opportunities int
		periodMS      uint32
		mbit          string
	}{
		{tracegen.LTE, 77112, 60_000, "15.42"},
		{tracegen.ThreeG, 11372, 120_000, "1.14"},
	} {
		t.Run(tc.model.Name, func(t *testing.T) {
			path := filepath.Join("testdata", tc.model.Name+".trace")
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			times, err := tc.model.Generate()
			if err != nil {
				t.Fatal(err)
			}
			var made bytes.Buffer
			if err := tracegen.Write(&made, times); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(made.Bytes(), file) {
				t.Fatalf("%s is not what the generator makes (%d bytes, it makes %d); run go generate ./pkg/qdisc/mmlink/", path, len(file), made.Len())
			}
			tr, err := mmlink.ParseTrace(path, bytes.NewReader(file))
			if err != nil {
				t.Fatal(err)
			}
			builtin, ok, err := mmlink.Builtin(tc.model.Name)
			if !ok || err != nil {
				t.Fatalf("no built-in %s: %v", tc.model.Name, err)
			}
			if got, want := builtin.Times(), tr.Times(); !slices.Equal(got, want) {
				t.Errorf("the built-in %s is not %s", tc.model.Name, path)
			}
			if tr.Len() != tc.opportunities || tr.PeriodMS() != tc.periodMS {
				t.Errorf("%d opportunities over %d ms, want %d over %d", tr.Len(), tr.PeriodMS(), tc.opportunities, tc.periodMS)
			}
			if got := fmt.Sprintf("%.2f", tr.RateBits()/1e6); got != tc.mbit {
				t.Errorf("mean rate %s Mbit/s, want %s", got, tc.mbit)
			}
		})
	}
}
