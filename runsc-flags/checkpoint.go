package runscflags

import (
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
		s, err := htb.ParseScript(f.text)
		if err != nil {
			continue // Validate refused it before
		}
		var stmts []string
		for _, cl := range s.Classes {
			stmts = append(stmts, "class "+cl.String())
		}
		args = append(args, "--"+f.name+"="+strings.Join(stmts, "; "))
	}
	return args
}

// Restore applies a checkpoint's state to the NIC, built from the same
// flags as the checkpointed one: its changes (Change), then what its
// kinds kept (and htb's quotas in an older checkpoint's fields).
func (n *NIC) Restore(s NICState) error {
	if len(s.Args) > 0 {
		if _, err := Change([]*NIC{n}, s.Args); err != nil {
			return err
		}
	}
	if err := n.restoreKinds(s.Egress, s.Ingress); err != nil {
		return err
	}
	if len(s.EgressQuotas) > 0 {
		q, ok := n.qdisc.(*htb.Discipline)
		if !ok {
			return fmt.Errorf("the checkpoint has htb quotas for a NIC whose qdisc is not htb")
		}
		if err := q.RestoreQuotas(s.EgressQuotas); err != nil {
			return err
		}
	}
	if len(s.IngressQuotas) > 0 {
		h := ingressHTB(n.ingress)
		if h == nil {
			return fmt.Errorf("the checkpoint has htb quotas on what a NIC receives, which has no htb classes")
		}
		if err := h.RestoreQuotas(s.IngressQuotas); err != nil {
			return err
		}
	}
	return nil
}
