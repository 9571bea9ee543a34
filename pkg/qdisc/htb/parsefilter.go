package htb

// This file holds a filter in tc's words: ParseFilter and FilterString.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
)

// ParseFilter parses a filter in tc's words, the text after `tc filter add
// dev eth0`, as classify.ParseRule's words with the chain it is attached
// to:
//
//	parent 1:10 dst 10.1.0.0/16 proto tcp classid 1:101
//
// parent (anywhere among the words, at most once) is the inner class whose
// chain the filter joins; left out, or the qdisc's handle (1:), it is the
// qdisc's root chain, and parent is returned as 0. A filter with no match
// words ("parent 1:10 classid 1:101") is tc's matchall: it takes every
// packet that reaches it. An error names the word to fix.
func ParseFilter(s string) (parent uint32, r classify.Rule, err error) {
	words := strings.Fields(s)
	rest := make([]string, 0, len(words))
	seen := false
	for i := 0; i < len(words); i++ {
		if words[i] != "parent" {
			rest = append(rest, words[i])
			continue
		}
		if seen {
			return 0, classify.Rule{}, errors.New(`htb: "parent" given twice`)
		}
		seen = true
		if i+1 == len(words) {
			return 0, classify.Rule{}, errors.New(`htb: "parent" needs a value: the class whose filters these are, e.g. parent 1:10 (1: for the qdisc's own)`)
		}
		i++
		id, err := parseClassIDWord(words[i])
		if err != nil {
			return 0, classify.Rule{}, fmt.Errorf("htb: parent %q: %w", words[i], err)
		}
		if id&0xffff != 0 {
			parent = id
		}
	}
	r, err = classify.ParseRule(strings.Join(rest, " "))
	if err != nil {
		return 0, classify.Rule{}, err
	}
	if parent != 0 && parent>>16 != r.Class>>16 {
		return 0, classify.Rule{}, fmt.Errorf("htb: parent %s and classid %s are of different qdiscs; a filter sends packets to a class of its own qdisc", classify.ClassID(parent), classify.ClassID(r.Class))
	}
	return parent, r, nil
}

// FilterString writes a filter of the chain of class parent (0: the root
// chain) in ParseFilter's words: "parent 1:10 dst 10.1.0.0/16 classid
// 1:101", or r's own words for the root chain.
func FilterString(parent uint32, r classify.Rule) string {
	if parent == 0 {
		return r.String()
	}
	return "parent " + classify.ClassID(parent) + " " + r.String()
}
