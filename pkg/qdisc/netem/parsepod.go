package netem

import (
	"fmt"
	"io"
)

// ParsePod reads a pod's words (Kind.ParsePod): as Parse, but a
// distribution must be one of the tables generated here, for a pod's
// annotation must not make the runtime open a file on the host (a table
// file's errors would show a pod what the file holds). Where the
// operator's netem reads a table file, a pod leaves the distribution out
// and it stays the operator's.
func ParsePod(words string) (Config, error) { return ParseWith(words, noFiles) }

// noFiles refuses every table file.
func noFiles(name string) (io.ReadCloser, error) {
	return nil, fmt.Errorf("a pod's words may name no table file; leave the distribution out (the operator's stays) or give uniform, normal, pareto or paretonormal")
}
