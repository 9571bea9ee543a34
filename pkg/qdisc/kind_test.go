package qdisc_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// testOptions are the options of the test's kinds.
type testOptions struct{}

func (testOptions) String() string { return "" }

// testKind returns a kind named name with the functions Register requires.
// Its constructors are never called: Register only checks they are set.
func testKind(name string) qdisc.Kind {
	return qdisc.Kind{
		Name:  name,
		Usage: "a kind of the registry's test: " + name,
		Parse: func(string) (qdisc.Options, error) { return testOptions{}, nil },
		New: func(stack.LinkEndpoint, tcpip.Clock, qdisc.Options) (qdisc.Discipline, error) {
			return nil, fmt.Errorf("%s: not built in this test", name)
		},
		NewTo: func(stack.LinkWriter, stack.LinkEndpoint, tcpip.Clock, qdisc.Options) (qdisc.Discipline, error) {
			return nil, fmt.Errorf("%s: not built in this test", name)
		},
	}
}

// registerSorted registers the kinds TestLookupKindsSorted looks for, out
// of order, once per test binary (a second Register of a name panics, and
// -count may run the test again).
var registerSorted = sync.OnceFunc(func() {
	for _, name := range []string{"test-kind-c", "test-kind-a", "test-kind-b", "test-kind-dup"} {
		qdisc.Register(testKind(name))
	}
	full := testKind("test-kind-full")
	full.Metrics = []qdisc.Metric{{Name: "sent_bytes", Member: "class", Help: "bytes sent", Cumulative: true}}
	full.Members = func(qdisc.Options) []string { return []string{"1:1"} }
	full.Samples = func(qdisc.Discipline) []qdisc.Sample { return nil }
	full.Save = func(qdisc.Discipline) []byte { return nil }
	full.Restore = func(qdisc.Discipline, []byte) error { return nil }
	qdisc.Register(full)
})

// TestRegisterRefuses: a kind that a runtime could not offer (no name, a
// name a flag or an annotation cannot carry, no parser or constructor,
// metrics it cannot read or members it cannot name, state it saves but
// cannot restore) or one whose name is taken is a programming error:
// Register panics saying what is wrong, and the kind is not registered,
// so a package's mistake shows at its init, not when a user picks the
// kind.
func TestRegisterRefuses(t *testing.T) {
	registerSorted() // for the duplicate
	for _, tc := range []struct {
		name string
		kind func() qdisc.Kind
		says string // what the panic says
	}{
		{
			name: "empty name",
			kind: func() qdisc.Kind { return testKind("") },
			says: "invalid kind name",
		},
		{
			name: "name with a space",
			kind: func() qdisc.Kind { return testKind("test kind") },
			says: "invalid kind name",
		},
		{
			name: "name with a tab",
			kind: func() qdisc.Kind { return testKind("test\tkind") },
			says: "invalid kind name",
		},
		{
			name: "name with an equals sign",
			kind: func() qdisc.Kind { return testKind("test-kind=x") },
			says: "invalid kind name",
		},
		{
			name: "name with a semicolon",
			kind: func() qdisc.Kind { return testKind("test-kind;x") },
			says: "invalid kind name",
		},
		{
			name: "no Parse",
			kind: func() qdisc.Kind { k := testKind("test-kind-no-parse"); k.Parse = nil; return k },
			says: "Parse, New and NewTo are required",
		},
		{
			name: "no New",
			kind: func() qdisc.Kind { k := testKind("test-kind-no-new"); k.New = nil; return k },
			says: "Parse, New and NewTo are required",
		},
		{
			name: "no NewTo",
			kind: func() qdisc.Kind { k := testKind("test-kind-no-newto"); k.NewTo = nil; return k },
			says: "Parse, New and NewTo are required",
		},
		{
			name: "Metrics without Samples or Members",
			kind: func() qdisc.Kind {
				k := testKind("test-kind-metrics-only")
				k.Metrics = []qdisc.Metric{{Name: "sent_bytes", Member: "class"}}
				return k
			},
			says: "Metrics, Members and Samples go together",
		},
		{
			name: "Metrics and Members without Samples",
			kind: func() qdisc.Kind {
				k := testKind("test-kind-no-samples")
				k.Metrics = []qdisc.Metric{{Name: "sent_bytes", Member: "class"}}
				k.Members = func(qdisc.Options) []string { return nil }
				return k
			},
			says: "Metrics, Members and Samples go together",
		},
		{
			name: "Metrics and Samples without Members",
			kind: func() qdisc.Kind {
				k := testKind("test-kind-no-members")
				k.Metrics = []qdisc.Metric{{Name: "sent_bytes", Member: "class"}}
				k.Samples = func(qdisc.Discipline) []qdisc.Sample { return nil }
				return k
			},
			says: "Metrics, Members and Samples go together",
		},
		{
			name: "Samples and Members without Metrics",
			kind: func() qdisc.Kind {
				k := testKind("test-kind-no-metrics")
				k.Members = func(qdisc.Options) []string { return nil }
				k.Samples = func(qdisc.Discipline) []qdisc.Sample { return nil }
				return k
			},
			says: "Metrics, Members and Samples go together",
		},
		{
			name: "Save without Restore",
			kind: func() qdisc.Kind {
				k := testKind("test-kind-save-only")
				k.Save = func(qdisc.Discipline) []byte { return nil }
				return k
			},
			says: "Save and Restore go together",
		},
		{
			name: "Restore without Save",
			kind: func() qdisc.Kind {
				k := testKind("test-kind-restore-only")
				k.Restore = func(qdisc.Discipline, []byte) error { return nil }
				return k
			},
			says: "Save and Restore go together",
		},
		{
			name: "CheckChange without Change",
			kind: func() qdisc.Kind {
				k := testKind("test-kind-check-only")
				k.CheckChange = func(qdisc.Discipline, qdisc.Options) error { return nil }
				return k
			},
			says: "CheckChange and Changed need Change",
		},
		{
			name: "Changed without Change",
			kind: func() qdisc.Kind {
				k := testKind("test-kind-changed-only")
				k.Changed = func(cur qdisc.Options, _ string) (qdisc.Options, error) { return cur, nil }
				return k
			},
			says: "CheckChange and Changed need Change",
		},
		{
			name: "a name registered already",
			kind: func() qdisc.Kind { k := testKind("test-kind-dup"); k.Usage = "the second"; return k },
			says: `kind "test-kind-dup" registered twice`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := tc.kind()
			got := panicOf(func() { qdisc.Register(k) })
			if got == "" {
				t.Fatalf("Register(%q) returned; want a panic saying %q", k.Name, tc.says)
			}
			if !strings.Contains(got, tc.says) {
				t.Errorf("Register(%q) panicked with %q; want one saying %q", k.Name, got, tc.says)
			}
			if r, ok := qdisc.Lookup(k.Name); ok && r.Usage == k.Usage {
				t.Errorf("Lookup(%q) finds the kind Register refused", k.Name)
			}
			if k.Name != "test-kind-dup" && slices.Contains(qdisc.KindNames(), k.Name) {
				t.Errorf("KindNames() = %q has %q, which Register refused", qdisc.KindNames(), k.Name)
			}
		})
	}
	// The kind first registered under the duplicate's name stays.
	if k, ok := qdisc.Lookup("test-kind-dup"); !ok || k.Usage != testKind("test-kind-dup").Usage {
		t.Errorf("Lookup(test-kind-dup) = %q, %v after a second Register; want the first kind", k.Usage, ok)
	}
}

// panicOf returns what f panics with, "" if it returns.
func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
			if msg == "" {
				msg = "(empty panic)"
			}
		}
	}()
	f()
	return ""
}

// TestLookupKindsSorted: a registered kind is found by its name with
// what it was registered with (a runtime reaches it only so), a name not
// registered is not found, and Kinds and KindNames list every kind
// sorted by name, whatever the order of registration, so that flags,
// help and error messages list them the same way on every run.
func TestLookupKindsSorted(t *testing.T) {
	registerSorted()
	for _, tc := range []struct {
		name  string
		found bool
	}{
		{"test-kind-a", true},
		{"test-kind-b", true},
		{"test-kind-c", true},
		{"test-kind-full", true},
		{"test-kind-nosuch", false},
		{"", false},
		{"TEST-KIND-A", false},
	} {
		k, ok := qdisc.Lookup(tc.name)
		if ok != tc.found {
			t.Errorf("Lookup(%q) found %v; want %v", tc.name, ok, tc.found)
			continue
		}
		if !ok {
			continue
		}
		if k.Name != tc.name || k.Usage != testKind(tc.name).Usage || k.Parse == nil || k.New == nil || k.NewTo == nil {
			t.Errorf("Lookup(%q) = %q (usage %q); want the kind registered as %q", tc.name, k.Name, k.Usage, tc.name)
		}
	}
	if k, _ := qdisc.Lookup("test-kind-full"); len(k.Metrics) != 1 || k.Members == nil || k.Samples == nil || k.Save == nil || k.Restore == nil {
		t.Errorf("Lookup(test-kind-full) lost what it was registered with: %+v", k)
	}

	names := qdisc.KindNames()
	if !slices.IsSorted(names) {
		t.Errorf("KindNames() = %q; want them sorted", names)
	}
	var ours []string
	for _, n := range names {
		if strings.HasPrefix(n, "test-kind-") {
			ours = append(ours, n)
		}
	}
	if want := []string{"test-kind-a", "test-kind-b", "test-kind-c", "test-kind-dup", "test-kind-full"}; !slices.Equal(ours, want) {
		t.Errorf("KindNames() has the test's kinds %q; want %q, once each, sorted", ours, want)
	}
	kinds := qdisc.Kinds()
	if len(kinds) != len(names) {
		t.Fatalf("Kinds() has %d kinds, KindNames() %d names", len(kinds), len(names))
	}
	for i, k := range kinds {
		if k.Name != names[i] {
			t.Errorf("Kinds()[%d] is %q; want %q, as KindNames()", i, k.Name, names[i])
		}
		if r, ok := qdisc.Lookup(k.Name); !ok || r.Usage != k.Usage {
			t.Errorf("Kinds()[%d] = %q is not the kind Lookup finds", i, k.Name)
		}
	}
}

// fakeQdisc is a Discipline that holds nothing, for Typed's test: fakeA
// and fakeB are two kinds' disciplines.
type fakeQdisc struct{ changedTo int }

func (*fakeQdisc) WritePacket(*stack.PacketBuffer) tcpip.Error     { return nil }
func (*fakeQdisc) Close()                                          {}
func (*fakeQdisc) Enqueue(*stack.PacketBuffer, uint32) tcpip.Error { return nil }
func (*fakeQdisc) Stats() qdisc.Stats                              { return qdisc.Stats{} }
func (*fakeQdisc) Quiescent() bool                                 { return true }
func (*fakeQdisc) Lanes() int                                      { return 1 }
func (*fakeQdisc) String() string                                  { return "fake" }
func (*fakeQdisc) Show() qdisc.Showing                             { return qdisc.Showing{Kind: "fake"} }

type fakeA struct{ fakeQdisc }
type fakeB struct{ fakeQdisc }

// typedOptions are fakeA's options: a number; "bad" fails to parse.
type typedOptions struct{ n int }

func (o typedOptions) String() string { return fmt.Sprint(o.n) }

// typedKind is a Typed kind over typedOptions and *fakeA whose functions
// record what they were given.
func typedKind() qdisc.Kind {
	return qdisc.Typed[typedOptions, *fakeA]{
		Name: "typed",
		Parse: func(w string) (typedOptions, error) {
			if w == "bad" {
				return typedOptions{}, fmt.Errorf("typed: bad words")
			}
			return typedOptions{n: len(w)}, nil
		},
		New: func(_ stack.LinkEndpoint, _ tcpip.Clock, o typedOptions) (*fakeA, error) {
			if o.n == 0 {
				return nil, fmt.Errorf("typed: n 0")
			}
			return &fakeA{}, nil
		},
		Change: func(q *fakeA, o typedOptions) error {
			q.changedTo = o.n
			return nil
		},
		Tighten: func(op, pod typedOptions) (typedOptions, error) {
			if pod.n > op.n {
				return typedOptions{}, fmt.Errorf("typed: %d is above %d", pod.n, op.n)
			}
			return pod, nil
		},
		Members: func(o typedOptions) []string { return []string{fmt.Sprint(o.n)} },
		Samples: func(q *fakeA) []qdisc.Sample { return []qdisc.Sample{{Metric: "changed", Value: uint64(q.changedTo)}} },
	}.Kind()
}

// TestTyped: a kind written on its own types gets, through the Kind a
// runtime uses, its own values through, nil (never a nil *D or a zero O)
// beside an error, and an error naming the types, not a panic, for
// options or a qdisc of another kind.
func TestTyped(t *testing.T) {
	k := typedKind()
	if k.NewTo != nil || k.Fit != nil || k.Save != nil || k.Restore != nil {
		t.Errorf("functions Typed left nil are set in its Kind")
	}
	if o, err := k.Parse("bad"); o != nil || err == nil {
		t.Errorf("Parse(bad) = %v, %v; want nil and an error", o, err)
	}
	o3, err := k.Parse("abc")
	if err != nil || o3 != (typedOptions{n: 3}) {
		t.Fatalf("Parse(abc) = %v, %v", o3, err)
	}
	if q, err := k.New(nil, nil, typedOptions{}); q != nil || err == nil {
		t.Errorf("New(n 0) = %#v, %v; want a nil Discipline and an error", q, err)
	}
	q, err := k.New(nil, nil, o3)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Change(q, typedOptions{n: 7}); err != nil || q.(*fakeA).changedTo != 7 {
		t.Errorf("Change to 7: %v, changed to %d", err, q.(*fakeA).changedTo)
	}
	if got := k.Samples(q); len(got) != 1 || got[0].Value != 7 {
		t.Errorf("Samples = %v, want one of 7", got)
	}
	if got := k.Members(o3); !slices.Equal(got, []string{"3"}) {
		t.Errorf("Members = %v, want [3]", got)
	}
	if p, err := k.Tighten(o3, typedOptions{n: 2}); err != nil || p != (typedOptions{n: 2}) {
		t.Errorf("Tighten(3, 2) = %v, %v", p, err)
	}
	if p, err := k.Tighten(o3, typedOptions{n: 4}); p != nil || err == nil {
		t.Errorf("Tighten(3, 4) = %v, %v; want nil and an error", p, err)
	}
	other := testOptions{}
	for name, call := range map[string]func() error{
		"New":            func() error { _, err := k.New(nil, nil, other); return err },
		"Change options": func() error { return k.Change(q, other) },
		"Change qdisc":   func() error { return k.Change(&fakeB{}, o3) },
		"Tighten pod":    func() error { _, err := k.Tighten(o3, other); return err },
		"Tighten op":     func() error { _, err := k.Tighten(other, o3); return err },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), "typed") {
			t.Errorf("%s with another kind's value: %v, want an error naming typed", name, err)
		}
	}
	if got := k.Samples(&fakeB{}); got != nil {
		t.Errorf("Samples of another kind's qdisc = %v, want none", got)
	}
	if got := k.Members(other); got != nil {
		t.Errorf("Members of another kind's options = %v, want none", got)
	}
}

// fakeQueue is a child queue of the hooks' test: it records the mtu it
// was built for.
type fakeQueue struct {
	qdisc.Queue
	mtu uint32
}

// fakeGate is a ceiling of the hooks' test.
type fakeGate struct{}

func (fakeGate) BookAll([]int64, []uint32, []int64) {}

// hookedA is fakeA with what the hooks put on it.
type hookedA struct {
	fakeQdisc
	gate    qdisc.Gate
	maxSize uint32
}

// hookedKind is a Typed kind over typedOptions and *hookedA with every
// hook beyond Typed's first fields: its options' n is what Changed adds
// to and what Queue builds for (a child of n 0 is the parent's own
// queue), Graft puts the child "" returns in n, and CheckChange refuses
// an n above 9.
func hookedKind() qdisc.Kind {
	return qdisc.Typed[typedOptions, *hookedA]{
		Name:   "hooked",
		Parse:  func(w string) (typedOptions, error) { return typedOptions{n: len(w)}, nil },
		New:    func(stack.LinkEndpoint, tcpip.Clock, typedOptions) (*hookedA, error) { return &hookedA{}, nil },
		Change: func(*hookedA, typedOptions) error { return nil },
		CheckChange: func(_ *hookedA, o typedOptions) error {
			if o.n > 9 {
				return fmt.Errorf("hooked: n %d is above 9", o.n)
			}
			return nil
		},
		Changed: func(cur typedOptions, w string) (typedOptions, error) {
			if w == "bad" {
				return typedOptions{}, fmt.Errorf("hooked: bad words")
			}
			return typedOptions{n: cur.n + len(w)}, nil
		},
		Queue: func(o typedOptions, mtu uint32) (qdisc.Queue, error) {
			if o.n == 0 {
				return nil, nil
			}
			return &fakeQueue{mtu: mtu + uint32(o.n)}, nil
		},
		Graft: func(o typedOptions, mtu uint32, child func(string) (qdisc.Child, error)) (typedOptions, error) {
			c, err := child("")
			if err != nil {
				return typedOptions{}, err
			}
			q, err := c.NewQueue(mtu)
			if err != nil {
				return typedOptions{}, err
			}
			if fq, ok := q.(*fakeQueue); ok {
				o.n = int(fq.mtu)
			}
			return o, nil
		},
		Ceiling: func(q *hookedA, gate qdisc.Gate, maxSize uint32) error {
			q.gate, q.maxSize = gate, maxSize
			return nil
		},
	}.Kind()
}

// TestTypedHooks: the hooks of changes, children and ceilings, written
// on a kind's own types, reach it through the Kind a runtime uses with
// its own values; an error comes back as nil options; options or a qdisc
// of another kind are an error naming the kind, not a panic; and a Child
// builds its queue by its kind's Queue (none for a nil Kind, an error
// naming a kind that cannot be a child).
func TestTypedHooks(t *testing.T) {
	k := hookedKind()
	if typedKind().CheckChange != nil || typedKind().Changed != nil || typedKind().Queue != nil || typedKind().Graft != nil || typedKind().Ceiling != nil {
		t.Errorf("hooks Typed left nil are set in its Kind")
	}
	q, err := k.New(nil, nil, typedOptions{n: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.CheckChange(q, typedOptions{n: 9}); err != nil {
		t.Errorf("CheckChange(n 9): %v", err)
	}
	if err := k.CheckChange(q, typedOptions{n: 10}); err == nil || !strings.Contains(err.Error(), "above 9") {
		t.Errorf("CheckChange(n 10): %v; want its refusal", err)
	}
	if o, err := k.Changed(typedOptions{n: 2}, "abc"); err != nil || o != (typedOptions{n: 5}) {
		t.Errorf("Changed(2, abc) = %v, %v; want 5", o, err)
	}
	if o, err := k.Changed(typedOptions{n: 2}, "bad"); o != nil || err == nil {
		t.Errorf("Changed(2, bad) = %v, %v; want nil and an error", o, err)
	}
	if err := k.Ceiling(q, fakeGate{}, 1514); err != nil || q.(*hookedA).gate == nil || q.(*hookedA).maxSize != 1514 {
		t.Errorf("Ceiling(gate, 1514): %v; the qdisc has %v, %d", err, q.(*hookedA).gate, q.(*hookedA).maxSize)
	}
	if err := k.Ceiling(q, nil, 0); err != nil || q.(*hookedA).gate != nil {
		t.Errorf("Ceiling(nil): %v; the qdisc keeps %v", err, q.(*hookedA).gate)
	}

	// Children: the kind's own Queue through a Child, and Graft asking
	// the runtime for its child.
	if cq, err := (qdisc.Child{Kind: &k, Options: typedOptions{n: 3}}).NewQueue(1500); err != nil || cq.(*fakeQueue).mtu != 1503 {
		t.Errorf("Child(n 3).NewQueue(1500) = %v, %v; want one built for 1503", cq, err)
	}
	if cq, err := (qdisc.Child{Kind: &k, Options: typedOptions{}}).NewQueue(1500); cq != nil || err != nil {
		t.Errorf("Child(n 0).NewQueue = %v, %v; want none: the parent's own queue", cq, err)
	}
	if cq, err := (qdisc.Child{}).NewQueue(1500); cq != nil || err != nil {
		t.Errorf("Child{}.NewQueue = %v, %v; want none", cq, err)
	}
	plain := typedKind()
	if cq, err := (qdisc.Child{Kind: &plain, Options: typedOptions{n: 1}}).NewQueue(1500); cq != nil || err == nil || !strings.Contains(err.Error(), "typed cannot be grafted") {
		t.Errorf("Child of a kind with no Queue: %v, %v; want an error naming it", cq, err)
	}
	var asked []string
	child := func(kind string) (qdisc.Child, error) {
		asked = append(asked, kind)
		return qdisc.Child{Kind: &k, Options: typedOptions{n: 4}}, nil
	}
	if o, err := k.Graft(typedOptions{n: 1}, 1000, child); err != nil || o != (typedOptions{n: 1004}) || !slices.Equal(asked, []string{""}) {
		t.Errorf("Graft = %v, %v, asking for %q; want n 1004, asking for the runtime's child", o, err, asked)
	}
	refuse := func(string) (qdisc.Child, error) { return qdisc.Child{}, fmt.Errorf("no child here") }
	if o, err := k.Graft(typedOptions{n: 1}, 1000, refuse); o != nil || err == nil {
		t.Errorf("Graft with the child refused = %v, %v; want nil and the error", o, err)
	}

	other := testOptions{}
	for name, call := range map[string]func() error{
		"CheckChange options": func() error { return k.CheckChange(q, other) },
		"CheckChange qdisc":   func() error { return k.CheckChange(&fakeB{}, typedOptions{}) },
		"Changed":             func() error { _, err := k.Changed(other, "x"); return err },
		"Queue":               func() error { _, err := k.Queue(other, 1500); return err },
		"Graft":               func() error { _, err := k.Graft(other, 1500, child); return err },
		"Ceiling":             func() error { return k.Ceiling(&fakeB{}, nil, 0) },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), "hooked") {
			t.Errorf("%s with another kind's value: %v, want an error naming hooked", name, err)
		}
	}
}
