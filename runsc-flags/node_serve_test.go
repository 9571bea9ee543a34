package runscflags

import (
	"fmt"
	"os"
	"time"
)

// The tests' sandboxes are this process: a node's allocator runs in it,
// on a goroutine, where runsc starts a process of its own.
func init() {
	StartNodeAllocator = func(path string) error {
		go func() {
			if err := ServeNode(path, 2*time.Second); err != nil {
				fmt.Fprintf(os.Stderr, "the node's allocator for %s: %v\n", path, err)
			}
		}()
		return nil
	}
}
