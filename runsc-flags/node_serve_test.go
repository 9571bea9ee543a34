package runscflags

import (
	"fmt"
	"os"
	"time"
)

// The tests' sandboxes are this process: a node's allocator runs in it,
// on a goroutine, where runsc starts a process of its own; it keeps no
// state file (the test's directory goes as the test ends).
func init() {
	StartNodeAllocator = func(path string) error {
		go func() {
			if err := serveNode(path, 2*time.Second, false); err != nil {
				fmt.Fprintf(os.Stderr, "the node's allocator for %s: %v\n", path, err)
			}
		}()
		return nil
	}
}
