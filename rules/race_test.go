//go:build race

package rules_test

// raceEnabled scales the large tests down under the race detector, which
// slows them about tenfold.
const raceEnabled = true
