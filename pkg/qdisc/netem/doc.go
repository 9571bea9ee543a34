// Package netem is Linux's network emulator (sch_netem.c, tc-netem(8))
// for netqdisc: a qdisc (Queue, on a NIC as Discipline) that delays,
// drops, duplicates, corrupts, reorders and rates packets, read from
// tc-netem's words (Parse) and shown as `tc qdisc show` shows it. It draws
// from the seeded generator Linux's netem uses (prandom's Tausworthe
// LFSR113, seeded as prandom_seed_state does, so that `seed N` gives
// Linux's sequence), with its correlated draws (get_crandom), delay
// distributions (tabledist over tables generated here from iproute2's
// formulas, and tables read from a file in iproute2's format) and loss
// models (random, the 4-state Markov chain, Gilbert-Elliott, and the
// Gilbert-Elliott parameters derived from an average loss and a mean
// burst length).
//
// # Corruption
//
// A packet corrupt picks (its correlated draw after the duplicate's and
// the loss's, as netem_enqueue draws them) is first cut into its
// segments if it is a GSO packet (netem_segment; gso.Split on the send
// path, gso.SplitReceived for a GRO aggregate on the receive path): the
// first is corrupted and the others are queued after it, each as a
// packet of its own. The packet is copied (netem never writes into
// bytes another holder may share), its TCP or UDP checksum is made where
// the link was to make it (skb_checksum_help), and one bit of one byte of
// its transport part is flipped: so every packet corrupted fails its
// transport checksum at the receiver. Linux flips a bit of the skb's
// linear part instead, which for a TCP packet holds its Ethernet, IP and
// TCP headers; a gVisor packet has no such part. Linux draws the byte and
// the bit from the kernel's entropy (get_random_u32_below); here they
// come from a second LFSR113 seeded with the seed XOR corruptSeedMix
// ("netemcor"), drawn as __get_random_u32_below draws, so that netem's
// own sequence stays Linux's draw for draw and a seed repeats which bits
// flip.
package netem
