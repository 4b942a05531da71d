package canaryfs

// Helpers only the tests use.

// ChromeDecrypt reverses Chrome's Linux encryption: what an infostealer does.
func ChromeDecrypt(v []byte) ([]byte, bool) {
	return chromeDecrypt(v, chromeKeyLinux())
}
