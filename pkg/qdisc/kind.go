package qdisc

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Kind is one queueing discipline as a runtime knows it, registered by its
// own package (Register), as Linux's sch_X.c registers its Qdisc_ops and
// tc's q_X.c parses and prints its options. A runtime (package
// runscflags), the receive path (package ingress), `runsc qdisc show` and
// `change`, annotations, metrics and checkpoints reach a kind only through
// it: adding a kind is one package and one Register.
type Kind struct {
	// Name is tc's name for the kind ("tbf", "fq_codel"): what --qdisc
	// takes and what its flag of words is named after.
	Name string
	// Usage says, in a line, what the kind does and which words it takes:
	// the help of its flag.
	Usage string
	// Example is a valid set of its words, for errors and the docs.
	Example string
	// Parse reads the kind's words, as tc takes them after "tc qdisc add
	// dev D root KIND". An error says which word to change.
	Parse func(words string) (Options, error)
	// New builds it on the send path: it writes to lower, timed by clock.
	New func(lower stack.LinkEndpoint, clock tcpip.Clock, o Options) (Discipline, error)
	// NewTo builds it on the receive path (package ingress): it writes
	// what leaves to out, queueing only on the goroutine that enqueues
	// (dispatch.Config.QueueOnly), for packets that cross link.
	NewTo func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, o Options) (Discipline, error)
	// Change applies o in place to q, which New or NewTo built, as `tc
	// qdisc change` does; nil if the kind cannot change in place.
	Change func(q Discipline, o Options) error
	// Tighten holds a pod's options to the operator's: it returns what
	// runs, which shapes every packet at least as tightly as operator, or
	// an error in tc's words that names what pod asks past operator. nil
	// if a pod may not change the kind's options at all.
	Tighten func(operator, pod Options) (Options, error)
	// Fit returns o held to a ceiling of bandwidth bytes a second (a
	// Kubernetes bandwidth annotation); nil if the kind has no ceiling to
	// hold it to.
	Fit func(o Options, bandwidth uint64) (Options, error)
	// Metrics are the counters the kind exports beyond Stats, each per
	// member (a class, a tin). Members names the members a Discipline
	// built from o has, known before it is built (a runtime declares a
	// metric's values up front); Samples reads them from one. All nil for
	// none.
	Metrics []Metric
	Members func(o Options) []string
	Samples func(q Discipline) []Sample
	// Save returns what a checkpoint keeps of q beyond its options (htb's
	// quotas), nil for nothing; Restore gives it back to a q built from
	// the same options. Both nil if the kind keeps nothing.
	Save    func(q Discipline) []byte
	Restore func(q Discipline, state []byte) error
}

// Options are a kind's settings. String gives them in the kind's words,
// which Parse reads back to the same Options.
type Options interface {
	String() string
}

// Discipline is a qdisc a Kind built, on the send path (a stack's
// QueueingDiscipline) or the receive path (Enqueue, from package ingress).
type Discipline interface {
	stack.QueueingDiscipline
	// Enqueue queues pkt on the receive path; hash picks a lane.
	Enqueue(pkt *stack.PacketBuffer, hash uint32) tcpip.Error
	// Stats returns the counters `tc -s qdisc` prints.
	Stats() Stats
	// Quiescent reports whether every lane is idle or waiting on a timer.
	Quiescent() bool
	// Lanes returns the number of lanes.
	Lanes() int
	// String describes it as `tc qdisc show` does.
	String() string
	Shower
}

// Metric is one counter a kind exports per member: Name is its suffix
// ("sent_bytes"), Member what it is per ("class", "tin"), Help its help;
// Cumulative says it only grows (a count, not a level such as a backlog).
// Under is the path a runtime puts it at below its direction's metrics
// ("cake/tin/": runsc's /network/qdisc/cake/tin/sent_bytes); "" is
// "KIND/MEMBER/".
type Metric struct {
	Name, Member, Help string
	Cumulative         bool
	Under              string
}

// Path returns where a runtime puts m, a metric of the kind named kind,
// below its direction's metrics: Under, or kind/member/, then Name.
func (m Metric) Path(kind string) string {
	if m.Under != "" {
		return m.Under + m.Name
	}
	return kind + "/" + m.Member + "/" + m.Name
}

// Sample is one value of a Metric: of Member (a class id, a tin's name).
type Sample struct {
	Metric, Member string
	Value          uint64
}

// registry holds the registered kinds by name.
var registry struct {
	mu sync.RWMutex
	// +checklocks:mu
	kinds map[string]Kind
}

// Register adds k to the kinds every runtime offers. Packages call it from
// an init function; a kind without a name, Parse, New or NewTo, or with a
// name already registered, is a programming error and panics, as a second
// register_qdisc of one name fails in Linux.
func Register(k Kind) {
	switch {
	case k.Name == "" || strings.ContainsAny(k.Name, " \t=;"):
		panic(fmt.Sprintf("qdisc.Register: invalid kind name %q", k.Name))
	case k.Parse == nil || k.New == nil || k.NewTo == nil:
		panic(fmt.Sprintf("qdisc.Register(%s): Parse, New and NewTo are required", k.Name))
	case (k.Samples == nil) != (len(k.Metrics) == 0) || (k.Members == nil) != (k.Samples == nil):
		panic(fmt.Sprintf("qdisc.Register(%s): Metrics, Members and Samples go together", k.Name))
	case (k.Save == nil) != (k.Restore == nil):
		panic(fmt.Sprintf("qdisc.Register(%s): Save and Restore go together", k.Name))
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, ok := registry.kinds[k.Name]; ok {
		panic(fmt.Sprintf("qdisc.Register: kind %q registered twice", k.Name))
	}
	if registry.kinds == nil {
		registry.kinds = make(map[string]Kind)
	}
	registry.kinds[k.Name] = k
}

// Lookup returns the kind registered as name.
func Lookup(name string) (Kind, bool) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	k, ok := registry.kinds[name]
	return k, ok
}

// Kinds returns every registered kind, by name.
func Kinds() []Kind {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	out := make([]Kind, 0, len(registry.kinds))
	for _, k := range registry.kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// KindNames returns the registered kinds' names, sorted.
func KindNames() []string {
	var names []string
	for _, k := range Kinds() {
		names = append(names, k.Name)
	}
	return slices.Clip(names)
}

// AsDiscipline returns what a kind's constructor returned as a
// Discipline: nil, not a nil pointer of D, with an error.
func AsDiscipline[D Discipline](d D, err error) (Discipline, error) {
	if err != nil {
		return nil, err
	}
	return d, nil
}
