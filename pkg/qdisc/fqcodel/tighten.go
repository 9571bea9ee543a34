package fqcodel

// Tighten returns pod, fq_codel's words a container author asks for, if
// they hold no more of the host than operator's: a packet limit, a memory
// limit and a flow table no larger (Linux's defaults where unset). The
// rest (target, interval, quantum, ECN, drop batch, CE threshold) orders
// and drops only the pod's own packets, and is the pod's to choose.
// Otherwise a *ConfigError names the word and the operator's value.
func (operator Config) Tighten(pod Config) (Config, error) {
	for _, w := range []struct {
		word    string
		pod, op uint32
		def     uint32
	}{
		{"limit", pod.Limit, operator.Limit, DefaultLimit},
		{"memory_limit", pod.MemoryLimit, operator.MemoryLimit, DefaultMemoryLimit},
		{"flows", pod.Flows, operator.Flows, DefaultFlows},
	} {
		p, op := orDefault(w.pod, w.def), orDefault(w.op, w.def)
		if p > op {
			return Config{}, configErr(w.word, "%s %d is above the operator's %d; give %d or less", w.word, p, op, op)
		}
	}
	return pod, nil
}

// orDefault is v, or def for an unset 0.
func orDefault(v, def uint32) uint32 {
	if v == 0 {
		return def
	}
	return v
}
