package runscflags

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// NICState is what a checkpoint keeps of a NIC's shaping, for the
// restored sandbox to shape as the checkpointed one did: the changes
// `runsc qdisc change` made (LiveArgs, when there were any), and what
// each direction's kind keeps beyond its options (Kind.Save: htb's
// quotas' counters, so that a restore does not renew a budget; a quota's
// period pauses while the sandbox is checkpointed).
type NICState struct {
	Args []string `json:"args,omitempty"`
	// Egress and Ingress are what the kind's Save kept of the qdisc it
	// built in each direction (kindlive.go).
	Egress  []byte `json:"egress,omitempty"`
	Ingress []byte `json:"ingress,omitempty"`
	// EgressQuotas and IngressQuotas are htb's quotas as checkpoints kept
	// them before htb was a kind: Restore still reads them; State no
	// longer writes them.
	EgressQuotas  []htb.QuotaState `json:"egress_quotas,omitempty"`
	IngressQuotas []htb.QuotaState `json:"ingress_quotas,omitempty"`
}

// IsZero reports whether s keeps nothing.
func (s NICState) IsZero() bool {
	return len(s.Args) == 0 && len(s.EgressQuotas) == 0 && len(s.IngressQuotas) == 0 && len(s.Egress) == 0 && len(s.Ingress) == 0
}

// State returns the NIC's state for a checkpoint; changed says whether
// `runsc qdisc change` changed its shaping (then its LiveArgs are kept).
func (n *NIC) State(changed bool) NICState {
	var s NICState
	if changed {
		cfg := n.Config()
		s.Args = cfg.LiveArgs()
		s.Args = append(s.Args, cfg.htbArgs()...)
		s.Args = append(s.Args, cfg.cakeArgs()...)
		s.Args = append(s.Args, cfg.fqCoDelArgs()...)
		s.Args = append(s.Args, cfg.kindArgs()...)
	}
	s.Egress, s.Ingress = n.saveKinds()
	return s
}

// htbArgs are the change arguments that set c's htb classes on a NIC
// built from the same flags: every class as it is in force.
func (c *Config) htbArgs() []string {
	var args []string
	for _, f := range []struct {
		name, text string
	}{{FlagHTB, c.HTB}, {FlagIngressHTB, c.IngressHTB}} {
		if f.text == "" {
			continue
		}
		if classes, ok := classStatements(f.text); ok {
			args = append(args, "--"+f.name+"="+classes)
		}
	}
	return args
}

// classStatements returns the class statements of htb script text, every
// class as it is: a change (and an annotation) that gives them changes
// nothing else. ok is false if text does not parse.
func classStatements(text string) (string, bool) {
	s, err := htb.ParseScript(text)
	if err != nil {
		return "", false // Validate refused it before
	}
	var stmts []string
	for _, cl := range s.Classes {
		stmts = append(stmts, "class "+cl.String())
	}
	return strings.Join(stmts, "; "), true
}

// Restore applies a checkpoint's state to the NIC, built on the restoring
// host from its operator's flags and the pod's annotations: its changes,
// then what its kinds kept (and htb's quotas in an older checkpoint's
// fields).
//
// A checkpoint's metadata is written by the sandbox's Sentry, which gVisor
// assumes may be compromised, so Restore takes it as it takes a pod's
// annotations, never with the operator's authority of `runsc qdisc
// change`: the NIC's Config is the ceiling, and the saved changes must
// pass the annotation policy against it (ApplyAnnotations: each flag's
// Rule, each kind's Tighten, the default queue's bound). A change that
// tightens is applied; one that would loosen (raise a rate, remove a
// ceiling, lengthen a queue, raise an htb class or its quota, reset a
// quota) is refused, not clamped: Restore returns an error naming the
// flag and the ceiling, and the NIC is as built. So a checkpoint taken
// after the operator raised a ceiling with `runsc qdisc change` restores
// only where the restoring host's flags allow as much. The flags that
// bound nothing (Rule OperatorOnly: fq_codel's quantum, ecn,
// ce_threshold, drop_batch) are taken as saved. With --allow-flag-override
// on the restoring host a checkpoint's changes are taken as an
// annotation's would be: as given.
//
// The kinds' saved state is held by each kind's Restore: htb's quotas'
// counters (htb.Tree.RestoreQuotas) to a class that has a quota on the
// restoring host, with no more of its budget or its period left than the
// class's configuration gives.
func (n *NIC) Restore(s NICState) error {
	if len(s.Args) > 0 {
		if _, err := change([]*NIC{n}, func(cur *Config) (*Config, error) { return cur.restored(s.Args) }); err != nil {
			return fmt.Errorf("restoring the checkpoint's changes: %w", err)
		}
	}
	if err := n.restoreKinds(s.Egress, s.Ingress); err != nil {
		return err
	}
	egress, err := oldQuotas(s.EgressQuotas)
	if err != nil {
		return err
	}
	ingress, err := oldQuotas(s.IngressQuotas)
	if err != nil {
		return err
	}
	return n.restoreKinds(egress, ingress)
}

// oldQuotas returns the htb quotas an older checkpoint kept in a field
// of its own (EgressQuotas, IngressQuotas) as htb's Kind keeps them
// (Kind.Save: the quotas' states in JSON), for htb's Restore; nil for
// none.
func oldQuotas(q []htb.QuotaState) ([]byte, error) {
	if len(q) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(q)
	if err != nil {
		return nil, fmt.Errorf("the checkpoint's htb quotas: %w", err)
	}
	return b, nil
}

// restored returns c with the changes a checkpoint saved (args, as
// Changed reads them) held to c by the annotation policy (see Restore):
// every flag whose value they change is applied as its annotation would
// be, c's values the ceilings, and what runs is what the policy returns.
func (c *Config) restored(args []string) (*Config, error) {
	next, err := c.Changed(args)
	if err != nil {
		return nil, err
	}
	if len(next.resets) > 0 {
		return nil, fmt.Errorf("a reset of an htb quota renews its budget, which only the operator may do (runsc qdisc change), never a checkpoint")
	}
	held := c.snapshot()
	held.Notices = nil
	asAnnotations := make(map[string]string)
	all := AllFlags()
	for i := range all {
		f := &all[i]
		v := f.get(next)
		if f.runtime || f.alias != nil || v == f.get(c) {
			continue
		}
		if f.Annotation.Permit == OperatorOnly {
			// It bounds nothing, so taking it loosens nothing.
			if err := held.Set(f.Name, v); err != nil {
				return nil, err
			}
			continue
		}
		if f.classes != NotCeiling {
			// An htb annotation gives classes, merged into the tree in
			// force; a change cannot touch the rest (Changed).
			classes, ok := classStatements(v)
			if !ok {
				return nil, fmt.Errorf("--%s=%q does not parse", f.Name, v)
			}
			v = classes
		}
		asAnnotations[AnnotationPrefix+f.Name] = v
	}
	if err := held.applyPolicy(asAnnotations, fromCheckpoint); err != nil {
		return nil, fmt.Errorf("%w; a checkpoint is written by the sandbox, so its changes may only tighten the shaping the NIC was built with (the restoring host's flags and the pod's annotations): restore with those flags raised to take them", err)
	}
	held = held.snapshot()
	held.Notices = nil
	return held, nil
}

// fromCheckpoint names a checkpoint's saved changes, given to applyPolicy
// as the annotations of their flags.
var fromCheckpoint = source{
	one: func(key, value string) string {
		return fmt.Sprintf("--%s=%q", strings.TrimPrefix(key, AnnotationPrefix), value)
	},
	set: func(keys []string) string {
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = "--" + strings.TrimPrefix(k, AnnotationPrefix)
		}
		return "the changes of " + strings.Join(names, ", ")
	},
}
