// Package safetext makes text from a skill or the sandbox safe to show.
//
// Every string a hostile skill controls (its name, the commands it runs, the
// paths it opens, the TLS names and URLs it asks for, what its tools print)
// ends up in a terminal, report.txt, a web page or a code-scanning
// dashboard. Shown raw, control characters move the cursor and repaint the
// screen, bidi overrides reorder what a reader sees, and invisible format
// characters hide text: a malicious trace can be made to draw "VERDICT:
// CLEAN". Every renderer passes untrusted text through this one package,
// which turns each such character into a visible escape (\x1b, \n, \u202e)
// and cuts very long lines.
//
// safetext is a leaf: it imports nothing of this module, and never drops
// text silently (what it changes stays visible as an escape or a "…").
package safetext
