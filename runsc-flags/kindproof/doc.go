// Package kindproof holds the registry's proof (issue 37): its test
// registers a qdisc of its own, bfifo (a byte-limited drop-tail queue, as
// Linux's sch_fifo.c bfifo), in a _test.go file, and gets from package
// runscflags, with no other file touched, what every kind gets: flags in
// both directions, annotations under its own tighten rule, Kubernetes'
// bandwidth, `runsc qdisc show` and `change`, metrics and checkpoints.
// docs/adding-a-qdisc.md walks it. It is a package of its own so that the
// test's kind is registered in no other test binary.
package kindproof
