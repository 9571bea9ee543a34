package lab

// This file holds the side-by-side table's classes, settings and loads.

import "strings"

// The classes of the side-by-side table (ANCHORS' "Linux HTB on a veth"):
// under a 100 Mbit/s root 1:1, the cluster class 1:10, which a filter by
// destination (10.77.1.0/24, the kernel's 10.78.1.0/24) fills, and the
// internet class 1:20, the default.
const (
	ClusterClass  = 1<<16 | 0x10
	InternetClass = 1<<16 | 0x20
)

// HTBSetting is one configuration of the table: the two classes' words
// (htb.ParseClass's, after "classid") and what the model of sch_htb
// predicts each sends, in bytes per second, alone and both busy.
type HTBSetting struct {
	Label             string
	Cluster, Internet string
	// ClusterAlone and InternetAlone are each class's share alone (its
	// ceil); Both the two shares with both busy: each its rate, the
	// excess to the lower prio up to its ceil, then to the other.
	ClusterAlone, InternetAlone uint64
	Both                        [2]uint64
}

const mbit = 125_000

// HTBSettings are ANCHORS' three configurations.
var HTBSettings = []HTBSetting{
	{"90/10 ceil 100 prio 0/1", "rate 90mbit ceil 100mbit prio 0", "rate 10mbit ceil 100mbit prio 1", 100 * mbit, 100 * mbit, [2]uint64{90 * mbit, 10 * mbit}},
	{"20/20 ceil 100 prio 0/1", "rate 20mbit ceil 100mbit prio 0", "rate 20mbit ceil 100mbit prio 1", 100 * mbit, 100 * mbit, [2]uint64{80 * mbit, 20 * mbit}},
	{"90 ceil 100 / 10 ceil 10", "rate 90mbit ceil 100mbit prio 0", "rate 10mbit ceil 10mbit prio 1", 100 * mbit, 10 * mbit, [2]uint64{90 * mbit, 10 * mbit}},
}

// Script is the setting's --qdisc-htb (internetExtra appended to the
// internet class's words: a quota).
func (s HTBSetting) Script(internetExtra string) string {
	return "qdisc default 20; class root classid 1:1 rate 100mbit; " +
		"class parent 1:1 classid 1:10 " + s.Cluster + "; " +
		"class parent 1:1 classid 1:20 " + strings.TrimSpace(s.Internet+" "+internetExtra) + "; " +
		"filter dst 10.77.1.0/24 classid 1:10"
}

// Flags are runsc's flags for the setting.
func (s HTBSetting) Flags(internetExtra string) []string {
	return []string{"--qdisc=htb", "--qdisc-htb=" + s.Script(internetExtra)}
}

// Loads are the table's loads: streams TCP streams into the cluster
// class, the internet class, or both.
func Loads(cluster, internet bool, streams int) []ClassLoad {
	var l []ClassLoad
	if cluster {
		l = append(l, ClassLoad{ClusterClass, PeerClusterAddr, streams})
	}
	if internet {
		l = append(l, ClassLoad{InternetClass, PeerAddr, streams})
	}
	return l
}
