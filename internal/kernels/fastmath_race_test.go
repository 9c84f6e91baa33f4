//go:build race

package kernels

// raceEnabled lets the long sweeps thin out under the race detector.
const raceEnabled = true
