//go:build race

package e2e

// raceDetector is true in a -race build, where the netstack runs several
// times slower and timing measurements say more about the detector.
const raceDetector = true
