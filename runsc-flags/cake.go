package runscflags

import (
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
)

// cake's flags: --qdisc=cake with --qdisc-cake, and --qdisc-ingress-cake,
// each tc-cake's words for the whole of cake (package cake's ParseQdisc),
// as --qdisc-htb is tc's words for htb's classes.

// parseCakeWords reads tc-cake's words s and returns them as
// cake.Config.String writes them back ("" for none).
func parseCakeWords(s string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", nil
	}
	cfg, err := cake.ParseQdisc(s)
	if err != nil {
		return "", err
	}
	return cfg.String(), nil
}

// cakeConfig returns the cake.Config of flag's words text: cake's
// defaults for "".
func cakeConfig(flag, text string) (cake.Config, error) {
	if strings.TrimSpace(text) == "" {
		return cake.DefaultConfig(), nil
	}
	cfg, err := cake.ParseQdisc(text)
	if err != nil {
		return cake.Config{}, fmt.Errorf("--%s: %w", flag, err)
	}
	return cfg, nil
}

// CakeConfig returns the cake.Config --qdisc-cake describes (cake's
// defaults when it is unset).
func (c *Config) CakeConfig() (cake.Config, error) { return cakeConfig(FlagCake, c.Cake) }

// IngressCakeConfig returns the cake.Config --qdisc-ingress-cake
// describes, with cake's ingress keyword.
func (c *Config) IngressCakeConfig() (cake.Config, error) {
	cfg, err := cakeConfig(FlagIngressCake, c.IngressCake)
	cfg.Ingress = true
	return cfg, err
}

// validateCake is Validate for cake's flags: --qdisc-cake needs
// --qdisc=cake, the words must be valid, and the receive direction takes
// one shaper.
func (c *Config) validateCake() error {
	switch {
	case c.QDisc != QDiscCake && c.Cake != "":
		return fmt.Errorf("--%s gives cake's settings and needs --%s=cake", FlagCake, FlagQDisc)
	case c.IngressCake != "" && (c.IngressRate != 0 || c.IngressPacketRate != 0):
		return fmt.Errorf("--%s and --%s both shape what the sandbox receives; give one of them", FlagIngressCake, FlagIngressRate)
	case c.IngressCake != "" && c.IngressHTB != "":
		return fmt.Errorf("--%s and --%s both shape what the sandbox receives; give one of them", FlagIngressCake, FlagIngressHTB)
	}
	for _, f := range []struct{ name, text string }{{FlagCake, c.Cake}, {FlagIngressCake, c.IngressCake}} {
		if _, err := cakeConfig(f.name, f.text); err != nil {
			return err
		}
	}
	return nil
}

// changeCake applies a `runsc qdisc change` of cake's words for f: value's
// words read after those in force, as `tc qdisc change ... cake` changes
// only what it names (bandwidth 50mbit keeps the rest). The change is the
// operator's: it is not held to the words in force.
func (c *Config) changeCake(f *Flag, value string) error {
	cur := *f.field(c).(*string)
	if _, err := cake.ParseQdisc(value); err != nil {
		return fmt.Errorf("--%s: %w", f.Name, err)
	}
	return c.Set(f.Name, strings.TrimSpace(cur+" "+value))
}

// applyKubeCake applies a Kubernetes bandwidth annotation of r bytes/s to
// the cake of its direction, if it has one, and reports whether it did:
// cake's bandwidth becomes r where that is lower (or cake was unlimited);
// the rest of cake stays the operator's. (Above the operator's bandwidth
// the pod gets the operator's, as with a tbf.)
func (c *Config) applyKubeCake(key string, r uint64) bool {
	flag, p := FlagCake, &c.Cake
	if key == AnnotationKubeIngress {
		flag, p = FlagIngressCake, &c.IngressCake
		if *p == "" {
			return false
		}
	} else if c.QDisc != QDiscCake {
		return false
	}
	cfg, err := cakeConfig(flag, *p)
	if err != nil {
		return false // Validate reports it
	}
	if cfg.Bandwidth == 0 || r < cfg.Bandwidth {
		cfg.Bandwidth = r
	}
	*p = cfg.String()
	return true
}

// cakeArgs are the change arguments that set c's cake on a NIC built from
// the same flags, for a checkpoint: the whole of each cake in force.
func (c *Config) cakeArgs() []string {
	var args []string
	if c.QDisc == QDiscCake {
		if cfg, err := c.CakeConfig(); err == nil {
			args = append(args, "--"+FlagCake+"="+cfg.String())
		}
	}
	if c.IngressCake != "" {
		args = append(args, "--"+FlagIngressCake+"="+c.IngressCake)
	}
	return args
}

// tightenCake applies an annotation's cake words, the whole of cake, to
// next over the operator's in op, and refuses them unless they shape no
// packet looser (cake.Config.Tighten, whose rule the package doc of cake
// writes out). With --allow-flag-override they need only be valid.
func (f *Flag) tightenCake(op, next *Config, value string) error {
	base := *f.field(op).(*string)
	if f.Name == FlagIngressCake && base == "" {
		return fmt.Errorf("--%s is not set by the operator: there is no cake to tighten; setting it %s", f.Name, requiresOverride)
	}
	pod, err := cake.ParseQdisc(value)
	if err != nil {
		return err
	}
	if !op.AllowFlagOverride {
		opCfg, err := cakeConfig(f.Name, base)
		if err != nil {
			return fmt.Errorf("the operator's %w", err)
		}
		if f.Name == FlagIngressCake {
			opCfg.Ingress, pod.Ingress = true, true
		}
		if pod, err = opCfg.Tighten(pod); err != nil {
			return fmt.Errorf("%w; loosening --%s=%q %s", err, f.Name, base, requiresOverride)
		}
	}
	*f.field(next).(*string) = pod.String()
	return nil
}
