// Package netem is Linux's network emulator (sch_netem.c, tc-netem(8))
// for netqdisc, built in parts. This part is what netem draws from: the
// seeded generator Linux's netem uses (prandom's Tausworthe LFSR113,
// seeded as prandom_seed_state does, so that `seed N` gives Linux's
// sequence), its correlated draws (get_crandom), the delay distributions
// (tabledist over tables generated here from iproute2's formulas, and
// tables read from a file in iproute2's format) and the loss models
// (random, the 4-state Markov chain, Gilbert-Elliott), with the
// Gilbert-Elliott parameters derived from an average loss and a mean
// burst length. The queue that delays, drops, duplicates, corrupts,
// reorders and rates packets with them is issue 49's next part.
package netem
