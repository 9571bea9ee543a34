package benchmarks

import (
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkWakeup measures the process CPU that one wake-up of an
// otherwise idle Go process costs, by each way a qdisc could sleep until a
// departure: it is why tbf rations its timer (see dispatch.Alarm). Each
// iteration sleeps 1.2 ms (a 1514-byte packet at 10 Mbit/s); the figure
// that matters is cpu-µs/wake, not ns/op.
//
//	go test -run XXX -bench Wakeup -benchtime 2000x ./benchmarks/
func BenchmarkWakeup(b *testing.B) {
	const period = 1200 * time.Microsecond
	for _, bc := range []struct {
		name string
		loop func(n int)
	}{
		{"AfterFunc", func(n int) {
			done := make(chan struct{})
			i := 0
			var t *time.Timer
			t = time.AfterFunc(period, func() {
				if i++; i >= n {
					close(done)
					return
				}
				t.Reset(period)
			})
			<-done
		}},
		{"Sleep", func(n int) {
			for range n {
				time.Sleep(period)
			}
		}},
		{"nanosleep", func(n int) {
			ts := unix.NsecToTimespec(int64(period))
			for range n {
				unix.Nanosleep(&ts, nil)
			}
		}},
		{"timerfd", func(n int) {
			fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
			if err != nil {
				b.Skip(err)
			}
			f := os.NewFile(uintptr(fd), "timerfd") // read through the netpoller
			defer f.Close()
			var buf [8]byte
			spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(period))}
			for range n {
				unix.TimerfdSettime(fd, 0, &spec, nil)
				f.Read(buf[:])
			}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c0 := processCPU()
			b.ResetTimer()
			bc.loop(b.N)
			b.StopTimer()
			b.ReportMetric(float64((processCPU()-c0).Microseconds())/float64(b.N), "cpu-µs/wake")
		})
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
