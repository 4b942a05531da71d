package persona

import (
	"path"
	"slices"
)

// VendorStubDir is where the sandbox image installs the vendor CLI stubs:
// where a global npm install or a vendor's install script would put the
// real ones.
const VendorStubDir = "/usr/local/bin"

// VendorCLIs are the command-line clients of hosted services that skills
// call and that the image does not carry (no registry serves them to it).
// The image installs a recording stub under each name (Dockerfile.sandbox,
// sandbox-image/vendor-clis.tsv, which must list the same names; a test
// checks): it answers --version and --help, prints a short success line for
// anything else and exits 0, so that a skill's flow goes on past the call.
// What the real client would have sent to its service is not in the trace:
// the exec, with its argv, is (IsVendorStub names it), and the report's
// coverage says which steps ran against a stub.
//
// Source: the commands that start lines of the shell code blocks of real
// skills (the shared corpus of registry skills, 2025), keeping the clients
// of hosted services (deploy, cloud, payments, databases, infrastructure as
// code, containers, notebooks and workflow platforms: lamin, modal, render,
// uip, vault). Agent and skill-registry CLIs that skills drive are here
// too (issue 25): claude (8 corpus skills run it), codex, gemini, copilot
// (2 each), clawhub and openclaw (1, and the labelled set of the issue),
// clawdbot (its bundled scripts name it; the seeded home has its
// configuration, as it has openclaw's). Without them a skill stops at its
// first call to one; with the stub, what the real one would have done (an
// agent's run, the configuration it writes, the skill it installs) is not
// in the trace either, and the coverage says so. Left out on purpose:
// what the image has for real (gh, aws, kubectl, jq, yq), interpreters,
// toolchains and package managers (uv, bun, deno, cargo, go, dotnet: a
// stub would skip the code they run; sandbox-image/ has a uv that runs
// it), local analysers (semgrep, codeql, trufflehog: a stub would invent
// their results), and tunnels (ngrok, cloudflared: their connections are
// evidence).
var VendorCLIs = []string{
	"amplify", "az", "bq", "cdk", "claude", "clawdbot", "clawhub", "codex", "copilot", "docker",
	"docker-compose", "doctl", "eas", "firebase", "fly", "flyctl", "gcloud", "gemini", "glab",
	"gsutil", "helm", "heroku", "lamin", "modal", "netlify", "openclaw", "pulumi", "railway",
	"render", "sam", "sentry-cli", "serverless", "shopify", "stripe", "supabase", "terraform", "tofu",
	"turso", "twilio", "uip", "vault", "vercel", "wrangler",
}

// CommandNotFound is the image's stand-in for a program the workstation
// does not have: bash's command_not_found_handle runs it with "--" and the
// command line (sandbox-image/command-not-found). It exits 0 for what looks
// like a program, so a skill's flow goes on; its exec is the record of what
// was missing.
const CommandNotFound = "/usr/lib/command-not-found"

// StandIn returns the command line a stand-in exec ran for (the missing
// program first), and whether the exec was the stand-in's.
func StandIn(execPath string, argv []string) ([]string, bool) {
	if path.Clean(execPath) != CommandNotFound || len(argv) < 2 {
		return nil, false
	}
	rest := argv[1:]
	if rest[0] == "--" {
		rest = rest[1:]
	}
	if len(rest) == 0 || rest[0] == "" {
		return nil, false
	}
	return rest, true
}

// IsVendorStub reports whether an executed path is one of the image's
// vendor CLI stubs, and the command it stands for.
func IsVendorStub(execPath string) (command string, ok bool) {
	p := path.Clean(execPath)
	if path.Dir(p) != VendorStubDir || !slices.Contains(VendorCLIs, path.Base(p)) {
		return "", false
	}
	return path.Base(p), true
}
