package mmlink

import (
	"strings"
	"sync"

	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink/tracegen"
)

// builtins are the traces named by a word rather than a path: the
// project's generated ones (package tracegen), made where they are
// named, so that they need no file (a sandbox's boot reads no host file).
var builtins = func() map[string]func() (*Trace, error) {
	m := make(map[string]func() (*Trace, error))
	for _, model := range tracegen.Models {
		m[model.Name] = sync.OnceValues(func() (*Trace, error) {
			ms, err := model.Generate()
			if err != nil {
				return nil, err
			}
			return NewTrace(model.Name, ms)
		})
	}
	return m
}()

// Builtin returns the built-in trace named name ("lte", "3g": the
// tracegen models of those names), and whether there is one.
func Builtin(name string) (*Trace, bool, error) {
	f, ok := builtins[name]
	if !ok {
		return nil, false, nil
	}
	t, err := f()
	return t, true, err
}

// LoadTrace returns the trace a word names: a built-in by its name, else
// the file at that path.
func LoadTrace(name string) (*Trace, error) {
	if t, ok, err := Builtin(name); ok {
		return t, err
	}
	return ReadTrace(name)
}

// builtinNames lists the built-ins' names for errors.
func builtinNames() string { return "a built-in trace: " + strings.Join(builtinList(), " or ") }
