package tbf

// MinPacketBytes is the packet size the ring is sized for (see
// minPacketBytes), for tests that model the ring's bound.
const MinPacketBytes = minPacketBytes
