package lab

import (
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// TestCakeMeasureArgs: the cake runs refuse settings they cannot measure
// with an error naming what to change, before any traffic or namespace.
func TestCakeMeasureArgs(t *testing.T) {
	l := &Lab{}
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"marked: no TOS", func() error {
			_, err := l.MeasureNetstackMarked(nil, 4, nil, measure.Options{Window: time.Second, PingInterval: 20 * time.Millisecond})
			return err
		}, "want at least one TOS"},
		{"marked: no ping interval", func() error {
			_, err := l.MeasureNetstackMarked(nil, 4, []uint8{0xb8}, measure.Options{Window: time.Second})
			return err
		}, "ping interval"},
		{"marked: window shorter than the interval", func() error {
			_, err := l.MeasureNetstackMarked(nil, 4, []uint8{0xb8}, measure.Options{Window: time.Millisecond, PingInterval: 20 * time.Millisecond})
			return err
		}, "within the window"},
		{"marked: no streams", func() error {
			_, err := l.MeasureNetstackMarked(nil, 0, []uint8{0xb8}, measure.Options{Window: time.Second, PingInterval: 20 * time.Millisecond})
			return err
		}, "want 1 or more"},
		{"download: no streams", func() error {
			_, err := l.MeasureNetstackDownload(nil, 125_000, measure.Options{Window: time.Second})
			return err
		}, "want a stream or more"},
		{"download: no rate", func() error {
			_, err := l.MeasureNetstackDownload(nil, 0, measure.Options{Streams: 1, Window: time.Second})
			return err
		}, "and a rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v; want one saying %q", err, tc.want)
			}
		})
	}
}

// TestCakeQDiscWords: CakeQDisc takes tc-cake's words and refuses others
// with cake's error.
func TestCakeQDiscWords(t *testing.T) {
	for _, tc := range []struct {
		words string
		ok    bool
	}{
		{"bandwidth 100mbit triple-isolate", true},
		{"bandwidth 100mbit diffserv4 ack-filter", true},
		{"bandwidth fast", false},
		{"bandwidth 10mbit no-such-word", false},
	} {
		_, err := CakeQDisc(tc.words)
		if (err == nil) != tc.ok {
			t.Errorf("CakeQDisc(%q): error %v; want ok %v", tc.words, err, tc.ok)
		}
	}
}
