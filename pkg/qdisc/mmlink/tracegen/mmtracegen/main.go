// Command mmtracegen writes the project's generated traces in mahimahi's
// format (package tracegen): with -dir, every model's trace to
// DIR/NAME.trace, as `go generate ./pkg/qdisc/mmlink/` does for the
// package's testdata; with -model, one model's to stdout, its seed and
// length as given.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink/tracegen"
)

var (
	dir      = flag.String("dir", "", "write every model's trace to DIR/NAME.trace")
	model    = flag.String("model", "", "write this model's trace (lte, 3g) to stdout")
	seed     = flag.Uint64("seed", 0, "with -model: the seed (0: the model's own)")
	duration = flag.Duration("duration", 0, "with -model: the trace's length, whole ms (0: the model's own)")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mmtracegen:", err)
		os.Exit(1)
	}
}

func run() error {
	switch {
	case *dir != "" && *model == "":
		for _, m := range tracegen.Models {
			if err := writeFile(filepath.Join(*dir, m.Name+".trace"), m); err != nil {
				return err
			}
		}
		return nil
	case *model != "" && *dir == "":
		for _, m := range tracegen.Models {
			if m.Name != *model {
				continue
			}
			if *seed != 0 {
				m.Seed = *seed
			}
			if *duration != 0 {
				if *duration%time.Millisecond != 0 || *duration > time.Duration(1<<32-1)*time.Millisecond {
					return fmt.Errorf("-duration %v: give whole ms, up to 2^32-1", *duration)
				}
				m.DurationMS = uint32(*duration / time.Millisecond)
			}
			times, err := m.Generate()
			if err != nil {
				return err
			}
			return tracegen.Write(os.Stdout, times)
		}
		return fmt.Errorf("-model %q: no such model (lte, 3g)", *model)
	}
	return fmt.Errorf("give -dir DIR, or -model NAME")
}

// writeFile writes m's trace to path.
func writeFile(path string, m tracegen.Model) error {
	times, err := m.Generate()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := tracegen.Write(f, times); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
