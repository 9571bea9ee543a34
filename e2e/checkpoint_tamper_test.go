package e2e

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// qdiscMetadataKey is the checkpoint metadata key under which runsc saves
// each NIC's runscflags.NICState (runsc/boot's qdiscKey, patch 0004).
const qdiscMetadataKey = "netqdisc"

// TestRunscRestoreTamperedImage is issue 47's point 4 on a real sandbox: a
// checkpoint's saved qdisc state is written by the sandbox's Sentry, which
// gVisor assumes may be compromised, and runsc's images carry no MAC, so a
// restore takes it as it takes a pod's annotations (runscflags.NIC.Restore).
// A sandbox started with liveStart's 100 Mbit/s tbf and changed to
// 10 Mbit/s is checkpointed once. A copy of the image whose saved changes
// say 1 Gbit/s instead, written back as such a Sentry could write it, is
// refused by a restore with the flags the sandbox started with, the error
// naming --qdisc-tbf-rate; the untampered image restores with the same
// flags and shapes at 10 Mbit/s.
func TestRunscRestoreTamperedImage(t *testing.T) {
	r := newRunscRig(t)
	s := r.start(t, lab.SandboxOptions{Flags: liveStart})
	change(t, s, []string{"--qdisc-tbf-rate=10mbit"}, "root refcnt 2 rate 10Mbit burst 3028b lat 50ms")
	image := t.TempDir()
	if err := s.Checkpoint(image); err != nil {
		t.Fatal(err)
	}
	tampered := t.TempDir()
	copyImage(t, image, tampered)
	raise := "--" + runscflags.FlagTBFRate + "=1gbit"
	tamperSavedArgs(t, tampered, func(arg string) string {
		if strings.HasPrefix(arg, "--"+runscflags.FlagTBFRate+"=") {
			return raise
		}
		return arg
	})

	err := s.Restore(tampered)
	r.pids = append(r.pids, s.Pids()...)
	if err == nil {
		// Not what NIC.Restore does; if it ever clamps instead, the
		// sandbox must shape at no more than the restoring host's flags.
		res, err := r.MeasureSandbox(s, measure.Options{Streams: 4, Warmup: warmup, Window: measureFor})
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("the image tampered to %s restored, shaping at %.3f Mbit/s; want the restore refused", raise, res.WireBps*8/1e6)
		if res.WireBps > 1.01*100*mbit {
			t.Errorf("the tampered image's sandbox shapes at %.3f Mbit/s, past the restoring host's --qdisc-tbf-rate=100mbit", res.WireBps*8/1e6)
		}
	} else {
		t.Logf("restoring the tampered image: %v", err)
		if msg := err.Error(); !strings.Contains(msg, "saved in the checkpoint") || !strings.Contains(msg, "--"+runscflags.FlagTBFRate+"=") {
			t.Errorf("restoring the image tampered to %s: %v\nwant the checkpoint's qdisc state refused, naming --%s", raise, err, runscflags.FlagTBFRate)
		}
	}
	s.Stop()

	if err := s.Restore(image); err != nil {
		t.Fatalf("restoring the untampered image: %v", err)
	}
	r.pids = append(r.pids, s.Pids()...)
	if out, err := s.QDisc("show"); err != nil || !strings.Contains(out, "root refcnt 2 rate 10Mbit burst 3028b lat 50ms") {
		t.Errorf("runsc qdisc show after restoring the untampered image: %v\n%s\nwant the changed tbf rate 10Mbit burst 3028b lat 50ms", err, out)
	}
	measureAt(t, r, s, "the untampered image restored", 10*mbit)
}

// copyImage copies the checkpoint image in dir from to dir to.
func copyImage(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			t.Fatalf("the checkpoint image has %s, not a regular file", e.Name())
		}
		in, err := os.Open(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(to, e.Name()))
		if err == nil {
			_, err = io.Copy(out, in)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		in.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// tamperSavedArgs rewrites the change arguments each NIC's saved state
// holds in the checkpoint image in dir, as edit returns them, and checks
// that the image then reads back so. It fails the test unless edit
// changes one of them.
func tamperSavedArgs(t *testing.T, dir string, edit func(string) string) {
	t.Helper()
	md, err := lab.CheckpointMetadata(dir)
	if err != nil {
		t.Fatal(err)
	}
	var saved map[string]runscflags.NICState
	if err := json.Unmarshal([]byte(md[qdiscMetadataKey]), &saved); err != nil {
		t.Fatalf("the checkpoint's %q metadata %q: %v", qdiscMetadataKey, md[qdiscMetadataKey], err)
	}
	t.Logf("the checkpoint saved %s=%s", qdiscMetadataKey, md[qdiscMetadataKey])
	edited := false
	for name, st := range saved {
		for i, a := range st.Args {
			if b := edit(a); b != a {
				st.Args[i], edited = b, true
			}
		}
		saved[name] = st
	}
	if !edited {
		t.Fatalf("the checkpoint's saved changes %s have nothing to tamper with", md[qdiscMetadataKey])
	}
	b, err := json.Marshal(saved)
	if err != nil {
		t.Fatal(err)
	}
	md[qdiscMetadataKey] = string(b)
	if err := lab.SetCheckpointMetadata(dir, md); err != nil {
		t.Fatal(err)
	}
	got, err := lab.CheckpointMetadata(dir)
	if err != nil || got[qdiscMetadataKey] != string(b) {
		t.Fatalf("the tampered image reads back %q (%v), want %q", got[qdiscMetadataKey], err, b)
	}
	t.Logf("tampered to %s=%s", qdiscMetadataKey, b)
}
