//go:build !linux

package mcptools_test

func steal() int { return 0 }
