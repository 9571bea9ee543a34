package htbtest

// ClassStats is a class of the model as `tc -s class show` prints it:
// the fields of package htb's ClassStats that Linux has, named alike, with
// the model's own Mode. DiffClasses compares a tree's to them.
type ClassStats struct {
	ID, Parent uint32
	// Level is 0 for a leaf, maxDepth-1 for a top class with children,
	// one less than its parent's for any other.
	Level int
	Prio  uint8
	// Rate, Ceil (bytes per second), Burst, CBurst and Quantum (bytes) are
	// in force, defaults filled in.
	Rate, Ceil    uint64
	Burst, CBurst uint32
	Quantum       uint32
	Mode          Mode
	// Bytes and Packets were dequeued from the class (for an inner class,
	// from its leaves).
	Bytes, Packets uint64
	// Drops counts the packets its leaf refused, Overlimits the times it
	// became CantSend; Requeues is 0, as in Linux's htb classes.
	Drops, Overlimits, Requeues uint64
	// BacklogBytes and BacklogPackets are queued in its leaf now.
	BacklogBytes, BacklogPackets uint64
	// Lends counts packets the class sent at its own level, Borrows
	// packets a descendant sent with its tokens; Giants is 0 (Linux no
	// longer counts them).
	Lends, Borrows, Giants uint64
	// Tokens and CTokens are the buckets' credit in ns as of the class's
	// last charge.
	Tokens, CTokens int64
}
