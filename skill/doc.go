// Package skill loads an AI-agent skill from disk: a single SKILL.md, any
// .md file, a folder with SKILL.md and supporting files, or a folder of
// several .md files. It records the sha256 of every file and of the whole
// skill, keeps line numbers for evidence, and flags hidden content (Unicode
// tag characters, zero-width and bidi characters, HTML comments, long base64
// blobs, data: URIs) for the rules.
//
// skill is a leaf of the pipeline (skill → plan → sandbox → agent → rules).
// It treats every byte it reads as untrusted: it must never panic on its
// input, never follow a symlink out of the skill folder (it refuses without
// reading the target), never execute anything, and never touch the network.
package skill
