package node

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// processID is how a board names a sandbox's process on the host: its pid
// in the low 32 bits and the low 32 bits of its start time (clock ticks
// since boot) above, so that a pid the kernel has since given another
// process (pid_max is often 32768) does not keep a dead sandbox's slot.
// Where the start time cannot be read, it is the pid alone.
func processID(pid int) uint64 {
	if pid <= 0 {
		return 0
	}
	id := uint64(uint32(pid))
	if _, start, ok := procStat(pid); ok {
		id |= uint64(uint32(start)) << 32
	}
	return id
}

// processAlive reports whether the process id names (processID) still
// runs: it exists, is no zombie (a killed sandbox nobody has reaped yet
// is gone for the node), and, where id has a start time, started then.
// 0 names none.
func processAlive(id uint64) bool {
	pid := int(uint32(id))
	if pid <= 0 {
		return false
	}
	state, start, ok := procStat(pid)
	if !ok || state == 'Z' || state == 'X' {
		return false
	}
	return id>>32 == 0 || uint32(start) == uint32(id>>32)
}

// procStat reads process pid's state and start time from
// /proc/PID/stat: after the command's name in parentheses (which may hold
// any byte, so the last ')' ends it), the state is the first field and
// the start time the twentieth.
func procStat(pid int) (state byte, start uint64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], start, true
}
