package lab

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// onNSThread runs f on a goroutine locked to its OS thread, which f may
// move into the network namespaces nss (enter(i) enters nss[i]; all are
// opened before f runs, so that f can go from one to the next quickly),
// and which goes back to its own before it is unlocked (left locked if it
// cannot, the thread ends with the goroutine).
func onNSThread(nss []string, f func(enter func(i int) error) error) error {
	ch := make(chan error, 1)
	go func() {
		ch <- func() error {
			runtime.LockOSThread()
			own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				runtime.UnlockOSThread()
				return fmt.Errorf("this thread's namespace: %v", err)
			}
			defer unix.Close(own)
			defer func() {
				if unix.Setns(own, unix.CLONE_NEWNET) == nil {
					runtime.UnlockOSThread()
				}
			}()
			fds := make([]int, len(nss))
			for i, ns := range nss {
				fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					return fmt.Errorf("namespace %s: %v", ns, err)
				}
				defer unix.Close(fd)
				fds[i] = fd
			}
			return f(func(i int) error {
				if err := unix.Setns(fds[i], unix.CLONE_NEWNET); err != nil {
					return fmt.Errorf("entering namespace %s: %v", nss[i], err)
				}
				return nil
			})
		}()
	}()
	return <-ch
}
