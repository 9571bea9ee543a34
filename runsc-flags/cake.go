package runscflags

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
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

// CakeConfig returns the cake.Config --qdisc-cake and cake's settings'
// flags (--qdisc-cake-bandwidth, ...) describe (cake's defaults when they
// are unset).
func (c *Config) CakeConfig() (cake.Config, error) {
	name := FlagCake
	if f := c.cakeKnobSet(); f != nil {
		name += " with --" + f.Name
	}
	return cakeConfig(name, c.cakeText())
}

// asOptions returns what a kind's options function returned as
// qdisc.Options: nil, not a zero O, with an error.
func asOptions[O qdisc.Options](o O, err error) (qdisc.Options, error) {
	if err != nil {
		return nil, err
	}
	return o, nil
}

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
	case !c.QDisc.Is(cake.Kind) && c.Cake != "":
		return fmt.Errorf("--%s gives cake's settings and needs --%s=cake", FlagCake, FlagQDisc)
	case !c.QDisc.Is(cake.Kind) && c.cakeKnobSet() != nil:
		return fmt.Errorf("--%s is one of cake's settings and needs --%s=cake", c.cakeKnobSet().Name, FlagQDisc)
	case c.IngressCake != "" && (c.IngressRate != 0 || c.IngressPacketRate != 0):
		return fmt.Errorf("--%s and --%s both shape what the sandbox receives; give one of them", FlagIngressCake, FlagIngressRate)
	case c.IngressCake != "" && c.IngressHTB != "":
		return fmt.Errorf("--%s and --%s both shape what the sandbox receives; give one of them", FlagIngressCake, FlagIngressHTB)
	}
	for _, f := range cakeKnobs {
		if _, err := f.cakeWords(f.get(c)); err != nil {
			return fmt.Errorf("--%s: %w", f.Name, err)
		}
	}
	for _, f := range []struct{ name, text string }{{FlagCake, c.Cake}, {FlagIngressCake, c.IngressCake}} {
		if _, err := cakeConfig(f.name, f.text); err != nil {
			return err
		}
	}
	_, err := c.CakeConfig()
	return err
}

// changeCake applies a `runsc qdisc change` of cake's words for f: value's
// words read after those in force, as `tc qdisc change ... cake` changes
// only what it names (bandwidth 50mbit keeps the rest). The change is the
// operator's: it is not held to the words in force.
//
// A setting's flag (--qdisc-cake-bandwidth=50mbit) replaces that setting;
// --qdisc-cake's words are read over the whole of cake in force, settings'
// flags included, which they then replace.
func (c *Config) changeCake(f *Flag, value string) error {
	if f.Kind == KindCakeKnob {
		return c.Set(f.Name, value)
	}
	if _, err := cake.ParseQdisc(value); err != nil {
		return fmt.Errorf("--%s: %w", f.Name, err)
	}
	if f.Name == FlagCake {
		cfg, err := cakeConfig(f.Name, c.cakeText()+" "+value)
		if err != nil {
			return err
		}
		c.foldCake(cfg)
		return nil
	}
	cur := *f.field(c).(*string)
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
	} else if !c.QDisc.Is(cake.Kind) {
		return false
	}
	text := *p
	if flag == FlagCake {
		text = c.cakeText()
	}
	cfg, err := cakeConfig(flag, text)
	if err != nil {
		return false // Validate reports it
	}
	if cfg.Bandwidth == 0 || r < cfg.Bandwidth {
		cfg.Bandwidth = r
	}
	if flag == FlagCake {
		c.foldCake(cfg)
	} else {
		*p = cfg.String()
	}
	return true
}

// cakeArgs are the change arguments that set c's cake on a NIC built from
// the same flags, for a checkpoint: the whole of each cake in force.
func (c *Config) cakeArgs() []string {
	var args []string
	if c.QDisc.Is(cake.Kind) {
		if cfg, err := c.CakeConfig(); err == nil {
			args = append(args, "--"+FlagCake+"="+cfg.String())
		}
		// The whole of cake is in --qdisc-cake's words: the settings'
		// flags the sandbox was started with must not override them.
		for _, f := range cakeKnobs {
			args = append(args, "--"+f.Name+"=")
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
//
// An annotation of one of cake's settings (dev.gvisor.flag.qdisc-cake-
// bandwidth) gives that setting over the whole of cake in next, and the
// result is held to the operator's as the whole words are. Either way
// next's cake becomes --qdisc-cake's words alone (foldCake).
func (f *Flag) tightenCake(op, next *Config, value string) error {
	base := *f.field(op).(*string)
	if f.Name == FlagIngressCake && base == "" {
		return fmt.Errorf("--%s is not set by the operator: there is no cake to tighten; setting it %s", f.Name, requiresOverride)
	}
	var pod cake.Config
	var err error
	if f.Kind == KindCakeKnob {
		cand := *next
		if err := f.set(&cand, value); err != nil {
			return err
		}
		pod, err = cand.CakeConfig()
	} else {
		pod, err = cake.ParseQdisc(value)
	}
	if err != nil {
		return err
	}
	if f.Name != FlagIngressCake {
		base = op.cakeText()
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
	if f.Name == FlagIngressCake {
		next.IngressCake = pod.String()
	} else {
		next.foldCake(pod)
	}
	return nil
}

// cake's settings one flag each (--qdisc-cake-bandwidth=100mbit,
// --qdisc-cake-isolation=dual-dsthost, ...), the words tc-cake(8) gives
// them: each is held as given and read as tc-cake's words after
// --qdisc-cake's (cakeText), so a setting's flag overrides what
// --qdisc-cake says of it, as a later word does in tc.

// cakeKnobRule is the annotation rule of cake's settings' flags: the
// whole of cake they give is held to the operator's by Tighten.
var cakeKnobRule = Rule{Permit: Tighten, Note: "as `--qdisc-cake`: cake with the setting given must be no looser than the operator's (cake.Config.Tighten)"}

// cakeBandwidthWords reads --qdisc-cake-bandwidth as runsc reads its rates
// (a bare number is bytes/s; cake.ParseBandwidth).
func cakeBandwidthWords(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	r, err := cake.ParseBandwidth(v)
	if err != nil {
		return "", err
	}
	if r == 0 {
		return "unlimited", nil
	}
	return fmt.Sprintf("bandwidth %dbps", r), nil
}

// cakeWordOf is the cakeWords of a setting that is one of tc-cake's
// words, which check accepts.
func cakeWordOf(check func(string) error) func(string) (string, error) {
	return func(v string) (string, error) {
		if v == "" {
			return "", nil
		}
		if err := check(v); err != nil {
			return "", err
		}
		return v, nil
	}
}

// cakeRTTWords reads --qdisc-cake-rtt: a preset's name or a time.
func cakeRTTWords(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if _, _, err := cake.ParseRTT(v); err != nil {
		return "", err
	}
	for _, p := range cake.Presets() {
		if p.Name == v {
			return v, nil
		}
	}
	return "rtt " + v, nil
}

// cakePrefixWords is the cakeWords of a setting tc-cake writes as word
// and a value ("memlimit 32mb").
func cakePrefixWords(word string) func(string) (string, error) {
	return func(v string) (string, error) {
		if v == "" {
			return "", nil
		}
		if strings.ContainsAny(v, " \t") {
			return "", fmt.Errorf("want one value, such as %s 32mb's 32mb", word)
		}
		words := word + " " + v
		if _, err := cake.ParseQdisc(words); err != nil {
			return "", err
		}
		return words, nil
	}
}

// cakeBoolWords is the cakeWords of a setting tc-cake turns on with on
// and off with off: true or false (or the words themselves).
func cakeBoolWords(on, off string) func(string) (string, error) {
	return func(v string) (string, error) {
		switch v {
		case "":
			return "", nil
		case on, off:
			return v, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "", fmt.Errorf("want true (%s) or false (%s)", on, off)
		}
		if b {
			return on, nil
		}
		return off, nil
	}
}

// cakeOverheadWords reads --qdisc-cake-overhead: a bare number of bytes
// (tc's overhead N), or tc-cake's framing words alone (ethernet,
// "overhead 38 mpu 84", docsis, atm, raw, ...): words that set anything
// but the overhead, mpu and cell framing are refused.
func cakeOverheadWords(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if _, err := strconv.ParseInt(v, 10, 32); err == nil {
		v = "overhead " + v
	}
	got, err := cake.ParseQdisc(v)
	if err != nil {
		return "", err
	}
	framing := cake.DefaultConfig()
	framing.Raw, framing.Overhead, framing.MPU, framing.ATM = got.Raw, got.Overhead, got.MPU, got.ATM
	if got != framing {
		return "", fmt.Errorf("%q sets more than the framing: give only overhead, mpu, atm, ptm, noatm, raw or a framing keyword (ethernet, docsis, ...), and the rest with their own flags or --%s", v, FlagCake)
	}
	return v, nil
}

// cakeKnobs are the flags of cake's settings, in the table's order.
var cakeKnobs = func() []*Flag {
	var fs []*Flag
	for i := range Flags {
		if Flags[i].cakeWords != nil {
			fs = append(fs, &Flags[i])
		}
	}
	return fs
}()

// cakeText is --qdisc=cake's settings in tc-cake's words: --qdisc-cake's
// and then each setting's flag's.
func (c *Config) cakeText() string {
	parts := []string{c.Cake}
	for _, f := range cakeKnobs {
		if w, err := f.cakeWords(f.get(c)); err == nil && w != "" {
			parts = append(parts, w)
		}
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

// cakeKnobSet returns the first of cake's settings' flags c sets, or nil.
func (c *Config) cakeKnobSet() *Flag {
	for _, f := range cakeKnobs {
		if f.get(c) != "" {
			return f
		}
	}
	return nil
}

// foldCake writes cfg, the whole of cake, as --qdisc-cake's words and
// unsets its settings' flags, which would override them.
func (c *Config) foldCake(cfg cake.Config) {
	c.Cake = cfg.String()
	for _, f := range cakeKnobs {
		*f.field(c).(*string) = ""
	}
}
