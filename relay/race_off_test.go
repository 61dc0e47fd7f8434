//go:build !race

package relay

// raceEnabled tells tests that the race detector is on.
const raceEnabled = false
