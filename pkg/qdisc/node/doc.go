// Package node shares a node's uplink between the sandboxes on it as
// Linux's htb shares a host's NIC between the classes of one tree: each
// sandbox is a leaf class with a rate it is guaranteed and a ceil it may
// reach by borrowing what its siblings leave idle, the lower prio first,
// by quantum within a prio.
//
// Linux's htb does it in one qdisc that sees every packet. Here each
// sandbox shapes its own packets inside its own netstack (what its class
// holds back waits there, and its TCP slows), so no qdisc sees the
// node's traffic: each sandbox publishes what its class wants in a page
// of its own (Seat), the node's Allocator on the host computes from what
// all publish the allocation htb's steady state would give (Allocate)
// and writes each its share, and each holds its own packets to it. The
// Allocator, not the sandboxes, holds the tree, the classes and
// admission: a sandbox's Sentry, which gVisor assumes may be
// compromised, reaches nothing of another's. A sandbox's guarantee never
// depends on the others.
package node
