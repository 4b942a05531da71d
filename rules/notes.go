package rules

// What each rule reads and the benign twins it is tested on
// (rules_test.go TestRules/TestNearMisses, twins_test.go TestTwins), for
// `sandboxctl rules explain ID`. A rule missing here still runs;
// TestRuleNotes asks for an entry.

// Evidence names used in Needs.
const (
	evTools   = "tool calls"
	evCmd     = "command text (shell parser)"
	evExec    = "exec argv"
	evTree    = "process tree (forks, execs, exits)"
	evOpen    = "file opens"
	evWrite   = "file writes, renames, chmods"
	evUnlink  = "file deletions"
	evDiff    = "file-system diff"
	evDNS     = "DNS queries"
	evHTTP    = "HTTP requests"
	evConn    = "raw connections and TLS hellos"
	evSocket  = "socket connects"
	evCanary  = "canary hits"
	evRes     = "sandbox resources"
	evSkill   = "skill text"
	evFetched = "fetched content shown to the model"
	evFinds   = "other rules' findings (After)"
	evPasses  = "both passes of a two-pass trace (watched and unwatched)"
	evFprint  = "the skill's stored fingerprint (trace --store)"
)

var ruleNotes = map[string]struct{ needs, twins []string }{
	"SBX-AGENT-001": {[]string{evWrite, evTools, evCmd, evDiff},
		[]string{"a formatter hook written to .claude/settings.json (SBX-PERSIST-006 only)"}},
	"SBX-BUDGET-001": {[]string{evRes}, []string{"an ordinary trace within every budget", "request heads summarised, nothing dropped (low, clean)"}},
	"SBX-BUDGET-002": {[]string{evRes, evOpen}, []string{"long paths under PATH_MAX"}},
	"SBX-BUDGET-003": {[]string{evTree}, []string{"a background server left running inside its call's session (SBX-BUDGET-004, low)"}},
	"SBX-BUDGET-004": {[]string{evTree}, nil},
	"SBX-CRED-001": {[]string{evOpen, evTools, evCanary},
		[]string{"git status reading .env.example and .env", "cat .env.example", "ssh-keygen -lf on a public key",
			"git, Python requests, docker reading their own configuration", "certificates in package caches"}},
	"SBX-CRED-002":    {[]string{evOpen, evTools}, []string{"a local security audit reading wallets, nothing leaving: suspicious, not malicious"}},
	"SBX-CRED-003":    {[]string{evOpen, evCmd}, []string{"cat /etc/passwd (not a secret file)"}},
	"SBX-CRED-004":    {[]string{evOpen, evTools}, []string{"a local security audit reading browser stores, nothing leaving: suspicious"}},
	"SBX-DESTROY-001": {[]string{evCmd, evExec}, []string{"rm -rf ./build node_modules"}},
	"SBX-DESTROY-002": {[]string{evCmd, evUnlink}, []string{"a build removing the files it created, caches and node_modules",
		"find . -name '*.pyc' -delete", "find ~/projects -name '*.pyc' -delete, find ~/logs -mtime +30 -delete (selective: counted from the unlinks)", "dd into a test image",
		"git clean -fdx in a repository (ignored and untracked files only)", "a generator that deletes a repository's files and writes them back", "a refactor removing some of a repository's files"}},
	"SBX-DESTROY-003": {[]string{evCmd}, []string{"a plain git push"}},
	"SBX-ENV-001":     {[]string{evCmd, evExec, evOpen}, []string{"env LANG=C sort words.txt (env running a command)"}},
	"SBX-EXEC-001": {[]string{evCmd, evExec, evTree, evHTTP},
		[]string{"rustup, uv, Homebrew installers (low)", "a script from a GitHub user (suspicious)",
			"curl | python3 -m json.tool, curl | jq, curl | python3 -c reading stdin", "a download saved to a file"}},
	"SBX-EXEC-002": {[]string{evCmd, evExec, evWrite, evTree},
		[]string{"the Docker convenience script saved and run (low)", "a script saved and read, never run",
			"chmod +x of a script that was not downloaded", "go.tgz from go.dev extracted"}},
	"SBX-EXEC-003": {[]string{evWrite, evDiff, evHTTP},
		[]string{"the stand-in script printed by a weather API call (its text proves nothing)",
			"the stand-in saved and read", "vendor installers answered with the stand-in (low)"}},
	"SBX-EXEC-004":  {[]string{evCmd, evExec}, []string{"base64 -d of data into a file", "a decoded payload that only prints (suspicious, not malicious)"}},
	"SBX-EXEC-005":  {[]string{evCmd, evExec}, []string{"GNU base64 -d"}},
	"SBX-FP-001":    {[]string{evOpen, evWrite, evDiff, evFprint}, []string{"the same files a stable fingerprint holds (no finding)"}},
	"SBX-FP-002":    {[]string{evDNS, evHTTP, evConn, evFprint}, []string{"the same hosts at other addresses (names compare, not addresses)"}},
	"SBX-FP-003":    {[]string{evCmd, evOpen, evCanary, evFprint}, nil},
	"SBX-FP-004":    {[]string{evExec, evFprint}, []string{"the same program with other operands (argv shape compares)"}},
	"SBX-FP-005":    {[]string{evTools, evHTTP, evCanary, evFprint}, nil},
	"SBX-FP-006":    {[]string{evFprint}, []string{"a new version that does the same as the earlier one (no finding)"}},
	"SBX-EVADE-001": {[]string{evPasses, evFinds}, []string{"the same harm in both passes (no finding: the harm findings decide)"}},
	"SBX-EVADE-002": {[]string{evPasses, evDNS, evHTTP, evConn}, []string{"the same destinations in both passes"}},
	"SBX-EXFIL-001": {[]string{evCanary, evHTTP, evDNS, evConn},
		[]string{"a GitHub token sent to api.github.com (SBX-EXFIL-006)", "a public API call carrying no secret",
			"a Slack bot posting a status with its token in the Authorization header or the token field (SBX-EXFIL-006)",
			"a Telegram bot whose token is in its /bot<token>/ path (SBX-EXFIL-006)"}},
	"SBX-EXFIL-002": {[]string{evCanary, evExec, evTools}, nil},
	"SBX-EXFIL-003": {[]string{evCanary, evTools}, nil},
	"SBX-CRED-006": {[]string{evCanary, evTools},
		[]string{"one credential file printed (SBX-EXFIL-003)", "secrets a sweep of the home printed (SBX-RECON-002)", "a key's fingerprint or a masked token"}},
	"SBX-EXFIL-004": {[]string{evFinds, evHTTP, evDNS, evConn, evOpen, evTree},
		[]string{"a local backup archive of secrets that never leaves", "a credential read followed by no egress",
			"a GET with a short id, a UUID or a digest in its path, query or headers", "a package download",
			"TLS to the name looked up with h2 and http/1.1", "AWS region endpoints and a service's subdomains in DNS",
			"a Slack webhook status with a commit hash after loading .env (medium: not a drop)",
			"a chart uploaded to Slack, a public key shared in a gist"}},
	"SBX-EXFIL-005": {[]string{evFinds, evHTTP, evDNS, evConn}, []string{"env LANG=C cmd"}},
	"SBX-EXFIL-006": {[]string{evCanary, evHTTP, evDNS},
		[]string{"a deploy tool calling the vendor's API by its real name with the user's token", "an AWS signature to a bucket the jail resolved"}},
	"SBX-EXFIL-007": {[]string{evHTTP, evConn, evDNS, evSocket}, []string{"JSON or form data to a raw IP (SBX-NET-001 only)", "opaque data to a host the DNS named", "a jail event no connect of the skill's processes opened", "a session UUID cookie to a raw IP"}},
	"SBX-EXFIL-008": {[]string{evHTTP},
		[]string{"a push to the project's own remote on GitHub or GitLab", "a push to git.example.com (a placeholder: medium, no harm)"}},
	"SBX-EXFIL-011": {[]string{evCanary, evHTTP, evDNS, evOpen},
		[]string{"the secret picked out of the project (SBX-EXFIL-001)", "the archive sent to a customer's site on the platform (*.vercel.app: SBX-EXFIL-001)"}},
	"SBX-HIDDEN-001": {[]string{evSkill}, nil},
	"SBX-HIDDEN-002": {[]string{evSkill}, nil},
	"SBX-HIDDEN-003": {[]string{evSkill}, nil},
	"SBX-HIDDEN-004": {[]string{evSkill}, nil},
	"SBX-MAC-001":    {[]string{evExec, evCmd}, []string{"security find-generic-password looking up an item without -w/-g (no secret)"}},
	"SBX-MAC-002":    {[]string{evExec, evCmd}, []string{"a notification or a yes/no dialog from osascript"}},
	"SBX-MAC-003":    {[]string{evExec}, []string{"a macOS command missing on Linux is not a shim"}},
	"SBX-NET-001":    {[]string{evHTTP, evConn, evSocket, evCmd}, []string{"connections to the addresses the jail's DNS answered", "a kubeconfig's cluster at a private address (low)"}},
	"SBX-NET-002":    {[]string{evHTTP, evConn, evSocket}, []string{"ports 53, 80, 443, 853, 8080, 8443"}},
	"SBX-NET-003": {[]string{evDNS, evHTTP, evConn, evCmd},
		[]string{"a Discord webhook notification (low)", "Discord and Telegram outside their webhook and bot APIs"}},
	"SBX-NET-004": {[]string{evDNS}, []string{"long legal S3 bucket names", "twenty *.github.io pages",
		"many short subdomains of one service"}},
	"SBX-NET-005":     {[]string{evDNS, evHTTP, evConn, evCmd}, []string{"api.github.com, user.github.io, gitlab.com, strike.me, pythonanywhere.com"}},
	"SBX-PERSIST-001": {[]string{evWrite, evTools, evDiff}, []string{"bash reading its own .bashrc"}},
	"SBX-PERSIST-002": {[]string{evWrite, evCmd}, []string{"crontab -l"}},
	"SBX-PERSIST-003": {[]string{evWrite, evCmd}, nil},
	"SBX-PERSIST-004": {[]string{evWrite, evTools}, []string{"ls ~/.ssh, ssh-keygen -lf", "echo 'ssh-rsa AAAA...' >> authorized_keys (a placeholder: low)"}},
	"SBX-PERSIST-005": {[]string{evWrite, evCmd}, []string{"git init writing .git/config and sample hooks", "git config user.name"}},
	"SBX-PERSIST-006": {[]string{evWrite, evTools}, nil},
	"SBX-PERSIST-007": {[]string{evWrite, evTools}, nil},
	"SBX-PERSIST-008": {[]string{evWrite, evTools}, []string{"writing notes.md in a project", "CLAUDE.md with the project's conventions", "editor rules that say never to fail silently", "Copilot instructions that ask to discuss new dependencies"}},
	"SBX-CRED-005":    {[]string{evExec}, []string{"aws configure get region", "gh auth status (no token shown)", "a bundled bin/aws (judged by what it reads: SBX-CRED-001)"}},
	"SBX-PERSIST-010": {[]string{evFinds, evHTTP, evCanary, evDiff},
		[]string{"GET /user with the token (a read)", "the home's own public key added to the user's account (low)",
			"a deploy key ssh-keygen made in the trace (medium)", "a repository webhook or a role for a service (suspicious)"}},
	"SBX-PERSIST-009": {[]string{evWrite, evTools, evDiff}, []string{"aws configure writing region and output", "npm config set registry https://registry.npmjs.org/ (low)", "a ProxyCommand ssh -W %h:%p bastion (low confidence)"}},
	"SBX-PKG-001":     {[]string{evHTTP}, nil},
	"SBX-PKG-002":     {[]string{evHTTP}, []string{"npm install from registry.npmjs.org, pip install from pypi.org"}},
	"SBX-PKG-003":     {[]string{evHTTP}, []string{"popular names themselves (axios, requests)", "names two edits away"}},
	"SBX-PKG-004": {[]string{evHTTP}, []string{"a private mirror over TLS (SBX-PKG-002, suspicious)",
		"only the index page fetched, no archive", "PyPI and npm themselves"}},
	"SBX-POLICY-001": {[]string{evTools, evSkill}, []string{"calls within the declared allowed-tools"}},
	"SBX-PRIV-001":   {[]string{evCmd, evExec}, []string{"sudo apt-get install (low)"}},
	"SBX-PRIV-002":   {[]string{evWrite, evCmd}, []string{"chmod +x, chmod 755"}},
	"SBX-PRIV-003":   {[]string{evWrite, evSocket, evCmd}, nil},
	"SBX-PRIV-004":   {[]string{evCmd, evExec}, []string{"sudo -n true"}},
	"SBX-PROBE-001":  {[]string{evOpen, evCmd}, []string{"ps reading /proc/1/cgroup", "node and df reading their own cgroup and mount table"}},
	"SBX-PROBE-002":  {[]string{evCmd, evOpen}, []string{"ps and pgrep reading /proc/*/status"}},
	"SBX-PROBE-003":  {[]string{evOpen, evCmd}, []string{"uptime run by its own command"}},
	"SBX-PROBE-004":  {[]string{evOpen, evCmd, evExec}, []string{"ps and pgrep reading every process's files", "a program reading its own /proc/self", "ls -l (modification times)"}},
	"SBX-RECON-001":  {[]string{evCmd}, []string{"which python3 git"}},
	"SBX-RECON-002":  {[]string{evCmd, evTools}, []string{"grep -rn TODO ."}},
	"SBX-RECON-003":  {[]string{evExec}, nil},
	"SBX-REMOTE-001": {[]string{evTools, evFetched, evSkill}, []string{"commands the skill text itself holds"}},
	"SBX-RES-001":    {[]string{evRes}, nil},
	"SBX-SELF-001":   {[]string{evWrite, evUnlink}, []string{"Python writing __pycache__ next to a bundled script"}},
	"SBX-SHELL-001":  {[]string{evCmd, evExec}, []string{"a /dev/tcp port check", "a one-off send through /dev/tcp"}},
	"SBX-SHELL-002":  {[]string{evCmd, evExec}, []string{"nc -zv host port", "socat port forwarding"}},
	"SBX-SHELL-003":  {[]string{evCmd, evExec}, nil},
	"SBX-SHELL-004":  {[]string{evTree, evSocket}, nil},
	"SBX-SHELL-005": {[]string{evConn}, []string{"a client that echoes what it gets back (the sum is not in the command)",
		"an SSH or IRC client (not a shell, never answers)"}},
	"SBX-TRACER-001": {[]string{evExec, evTools}, nil},
	"SBX-TRACER-002": {[]string{evOpen}, []string{"atime moved by a traced read", "atime moved by a read through a hard link"}},
}

func applyNotes(defs []*ruleDef) {
	for _, d := range defs {
		if n, ok := ruleNotes[d.ID]; ok {
			d.Needs, d.Twins = n.needs, n.twins
		}
	}
}
