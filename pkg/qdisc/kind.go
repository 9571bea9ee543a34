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
	// ParsePod is Parse for words from a pod's annotation, which must not
	// make the runtime read the host's files (a table a word names): it
	// refuses such a word, saying so. nil where Parse reads no file.
	ParsePod func(words string) (Options, error)
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
	// CheckChange reports whether Change would take o on q, changing
	// nothing: nil, or Change's error. A runtime that changes several
	// qdiscs as one (`runsc qdisc change` on every NIC) checks them all
	// first, so that none is left changed when one refuses. nil where
	// Change checks nothing it could refuse after the options parsed.
	CheckChange func(q Discipline, o Options) error
	// Changed returns the options that a change of words makes of cur,
	// the options in force, as `tc qdisc change dev D root KIND words`
	// does: fq_codel_change sets what the words name and every other
	// setting keeps its value. nil where a change's words are the kind's
	// whole options, as tbf_change and netem_change take them.
	Changed func(cur Options, words string) (Options, error)
	// Queue builds the kind as the queue under another kind's shaper (a
	// tbf's child; the leaves of an htb), for packets of at most mtu
	// bytes, as `tc qdisc add dev D parent 1:1 KIND` grafts one there. A
	// nil Queue with no error is the shaper's own byte FIFO (fifo: what
	// Linux's tbf has unless told). nil if the kind cannot be a child.
	Queue func(o Options, mtu uint32) (Queue, error)
	// Graft returns o with the queues grafted under the kind built, for
	// a link whose largest frame is mtu: child returns the kind a runtime
	// grafts there and its options, by the name the kind's words give
	// ("fq_codel" for the leaves an htb script grafts fq_codel on), or
	// "" where the runtime chooses (a tbf's child; Child's Kind nil for
	// the kind's own queue). New and NewTo then build what it returns.
	// nil if the kind grafts nothing.
	Graft func(o Options, mtu uint32, child func(kind string) (Child, error)) (Options, error)
	// Ceiling puts gate, the buckets of a ceiling (a tbf's, tbf.NewGate),
	// over q's queue in place, or lifts the ceiling with a nil gate, as
	// `tc qdisc replace dev D root tbf ...` puts a tbf over a running
	// qdisc: each lane's head leaves when gate books it, and maxSize is
	// the largest packet gate passes. It is how `runsc qdisc change` sets
	// a ceiling on a sandbox started without one. nil if the kind cannot
	// take one in place.
	Ceiling func(q Discipline, gate Gate, maxSize uint32) error
}

// Child is a kind a runtime grafts under another (Kind.Graft), with its
// options; a nil Kind is the parent's own queue.
type Child struct {
	Kind    *Kind
	Options Options
}

// NewQueue builds c for packets of at most mtu bytes (Kind.Queue): nil
// for the parent's own queue, or an error naming the kind where it
// cannot be a child.
func (c Child) NewQueue(mtu uint32) (Queue, error) {
	if c.Kind == nil {
		return nil, nil
	}
	if c.Kind.Queue == nil {
		return nil, fmt.Errorf("%s cannot be grafted under another qdisc", c.Kind.Name)
	}
	return c.Kind.Queue(c.Options, mtu)
}

// Gate is a ceiling's buckets as a Kind's Ceiling takes them: it books
// the departures of a lane's packets (package dispatch's Gate, which has
// the same method, and which every Gate is).
type Gate interface {
	// BookAll books packets of the given sizes, in order, and writes
	// their departures, each not before seen[i], in nanoseconds on the
	// lane's clock.
	BookAll(seen []int64, sizes []uint32, departures []int64)
}

// SettingError is an error about one setting of a kind's options, named
// as tc names it, so that a runtime whose flags set that setting can
// name the flag to change (tbf's and fq_codel's ConfigError).
type SettingError interface {
	error
	// Setting returns the kind's name ("tbf"), tc's name of the setting
	// ("burst") and what is wrong with it and what to change.
	Setting() (kind, name, msg string)
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
// an init function; a kind without a name, Parse, New or NewTo, with
// functions that need another it lacks (Samples without Metrics, Restore
// without Save, CheckChange or Changed without Change), or with a name
// already registered, is a programming error and panics, as a second
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
	case k.Change == nil && (k.CheckChange != nil || k.Changed != nil):
		panic(fmt.Sprintf("qdisc.Register(%s): CheckChange and Changed need Change", k.Name))
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
