// Package canaryfs builds the fake home directory that a skill sees as $HOME:
// a lived-in user's home (desktop, documents, downloads, projects with git
// history, browser profiles, shell history) in which every credential-shaped
// file holds a token from a canary.Set, in the file's real format.
//
// The orchestrator calls Build once per trace, copies the result into the
// sandbox with WriteTar and keeps Home.Set on the host for detection; a
// later sighting of a token proves the skill read its file. canaryfs draws
// every random choice from one source (crypto/rand, or a seed for
// reproducible homes), writes only where it is told to (an io.Writer or a
// directory given to WriteDir), and never reads the real home directory or
// anything else of the host. It does not own /etc: the image does.
package canaryfs
