package mcptools

// SetEntropyDevices points the devices Entropy replaces at paths (a test's
// own folder, on any file system) until restore.
func SetEntropyDevices(paths []string) (restore func()) {
	old := entropyDevices
	entropyDevices.paths, entropyDevices.tmpfsOnly = paths, false
	return func() { entropyDevices = old }
}

// ActiveListeners is how many getrandom listeners are served now.
func ActiveListeners() int { return int(activeListeners.Load()) }
