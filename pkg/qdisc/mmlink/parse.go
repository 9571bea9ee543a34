package mmlink

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink/tracegen"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Parse reads mmlink's words,
//
//	trace NAME|FILE [limit PACKETS] [bytes BYTES] [droptail]
//
// into a Config, reading the trace (LoadTrace): a built-in's name, or a
// file in mahimahi's format. limit is the packets that may wait
// (DefaultLimit where not given), bytes the bytes (tc's sizes: 30000,
// 30kb); droptail, the only queue there is, may be said. An error says
// which word to change.
func Parse(words string) (Config, error) { return ParseWith(words, LoadTrace) }

// ParseWith is Parse with traces loaded by load.
func ParseWith(words string, load func(name string) (*Trace, error)) (Config, error) {
	c := Config{Limit: DefaultLimit}
	w := strings.Fields(words)
	seen := map[string]bool{}
	for i := 0; i < len(w); i++ {
		word := w[i]
		if seen[word] {
			return Config{}, fmt.Errorf("mmlink: %q is given twice; give it once", word)
		}
		seen[word] = true
		switch word {
		case "droptail":
			continue
		case "trace", "limit", "bytes":
		default:
			return Config{}, fmt.Errorf("mmlink: %w", unknownWord(word))
		}
		if i+1 >= len(w) {
			return Config{}, fmt.Errorf("mmlink: %q needs a value (%s)", word, Usage)
		}
		i++
		var err error
		switch v := w[i]; word {
		case "trace":
			c.Trace, err = load(v)
		case "limit":
			c.Limit, err = parseLimit(v)
		case "bytes":
			c.Bytes, err = parseBytes(v)
		}
		if err != nil {
			return Config{}, fmt.Errorf("mmlink: %w", err)
		}
	}
	if err := c.Check(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Usage is mmlink's words in a line.
const Usage = "trace NAME|FILE [limit PACKETS] [bytes BYTES]"

// parseLimit reads limit's value: a count of packets.
func parseLimit(v string) (uint32, error) {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n == 0 || n > MaxLimit {
		return 0, fmt.Errorf("limit %q: give a count of packets from 1 to %d", v, MaxLimit)
	}
	return uint32(n), nil
}

// parseBytes reads bytes' value: a size, as tc reads one.
func parseBytes(v string) (uint32, error) {
	n, err := rate.ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("bytes %q: %w", v, err)
	}
	if n < OpportunityBytes || n > math.MaxUint32 {
		return 0, fmt.Errorf("bytes %q: give %d bytes (one full packet) to %d", v, OpportunityBytes, uint32(math.MaxUint32))
	}
	return uint32(n), nil
}

// unknownWord says what a word that is not mmlink's should be.
func unknownWord(w string) error {
	switch {
	case w == "packets" || strings.HasPrefix(w, "packets="):
		return fmt.Errorf("%q is mahimahi's packets=N; give limit N", w)
	case strings.HasPrefix(w, "bytes="):
		return fmt.Errorf("%q is mahimahi's bytes=N; give bytes N", w)
	case w == "infinite":
		return fmt.Errorf("an infinite queue is not offered (the senders may be untrusted); give limit PACKETS, up to %d", MaxLimit)
	case w == "drophead" || w == "codel" || w == "pie":
		return fmt.Errorf("mahimahi's %s queue is not offered; the queue is droptail: give limit PACKETS and bytes BYTES", w)
	}
	return fmt.Errorf("%q is not a word of mmlink's (%s)", w, Usage)
}

// builtinList is the built-in traces' names.
func builtinList() []string {
	var names []string
	for _, m := range tracegen.Models {
		names = append(names, m.Name)
	}
	return names
}
