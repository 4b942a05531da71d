//go:build !race

package rules_test

const raceEnabled = false
