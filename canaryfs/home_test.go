package canaryfs_test

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/persona"
	"golang.org/x/crypto/ssh"
	"gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden files")

var now = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

var (
	homesMu sync.Mutex
	homes   = map[string]*canaryfs.Home{}
)

// build returns the home of seed, built once per test binary: tests only
// read it.
func build(t testing.TB, seed string) *canaryfs.Home {
	t.Helper()
	homesMu.Lock()
	defer homesMu.Unlock()
	if h, ok := homes[seed]; ok {
		return h
	}
	h, err := canaryfs.Build(canaryfs.Options{Seed: []byte(seed), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	homes[seed] = h
	return h
}

// fresh builds a home that no other test shares.
func fresh(t testing.TB, seed string) *canaryfs.Home {
	t.Helper()
	h, err := canaryfs.Build(canaryfs.Options{Seed: []byte(seed), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func tarBytes(t testing.TB, h *canaryfs.Home) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := h.WriteTar(&buf, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func file(t testing.TB, h *canaryfs.Home, p string) []byte {
	t.Helper()
	f, ok := h.File(p)
	if !ok {
		t.Fatalf("no %s in the home", p)
	}
	return f.Content
}

// glob returns the files matching a home-relative pattern.
func glob(h *canaryfs.Home, pattern string) []canaryfs.File {
	var out []canaryfs.File
	for _, f := range h.Files {
		if canary.MatchPath(pattern, h.HomeDir, f.Path) {
			out = append(out, f)
		}
	}
	return out
}

// findID returns the id of the token whose value is v, or "".
func findID(h *canaryfs.Home, v string) string {
	for _, tok := range h.Set.Tokens() {
		if tok.Value == v {
			return tok.ID
		}
	}
	return ""
}

func TestDeterministic(t *testing.T) {
	a, b := tarBytes(t, fresh(t, "same")), tarBytes(t, fresh(t, "same"))
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different tar")
	}
	if c := tarBytes(t, build(t, "fixture")); bytes.Equal(a, c) {
		t.Fatal("different seeds, same tar")
	}
}

func TestTwoBuildsShareNoToken(t *testing.T) {
	h1, err := canaryfs.Build(canaryfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h2, err := canaryfs.Build(canaryfs.Options{User: h1.User, Hostname: h1.Hostname})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, tok := range h1.Set.Tokens() {
		seen[tok.Value] = tok.ID
	}
	for _, tok := range h2.Set.Tokens() {
		if id, ok := seen[tok.Value]; ok {
			t.Errorf("token %s of the second home equals %s of the first", tok.ID, id)
		}
	}
	// Nothing of one home's secrets is found anywhere in the other home.
	if hits := h1.Set.Find(tarBytes(t, h2)); len(hits) > 0 {
		t.Errorf("first home's tokens found in the second home: %v", hits)
	}
}

func TestEveryTaxonomyFilePlanted(t *testing.T) {
	h := build(t, "fixture")
	for _, spec := range canary.Files {
		pattern := spec.Path
		for _, ph := range []string{"<project>", "<profile>", "<keygrip>", "<time>--<address>", "<email>"} {
			pattern = strings.ReplaceAll(pattern, ph, "*")
		}
		files := glob(h, pattern)
		if len(files) == 0 {
			t.Errorf("%s: not planted", spec.Path)
			continue
		}
		for _, f := range files {
			loc := "~" + strings.TrimPrefix(f.Path, h.HomeDir)
			for _, k := range spec.Kinds {
				if _, ok := h.Token(loc, k); !ok {
					t.Errorf("%s: no %s token", loc, k)
				}
			}
		}
	}
}

func TestEveryTokenPlantedAndFound(t *testing.T) {
	h := build(t, "fixture")
	env := strings.Join(h.Env, "\n") + "\n"
	for _, tok := range h.Set.Tokens() {
		var data []byte
		if name, ok := strings.CutPrefix(tok.Location, "env:"); ok {
			if !strings.Contains(env, name+"="+tok.Value+"\n") {
				t.Errorf("%s: not in the environment", tok.ID)
			}
			data = []byte(env)
		} else {
			data = file(t, h, tok.Location)
		}
		found := false
		for _, hit := range h.Set.Find(data) {
			found = found || hit.Token.ID == tok.ID
		}
		if !found {
			t.Errorf("%s (%s): Find does not see it in %s", tok.ID, tok.Kind, tok.Location)
		}
	}
	for _, f := range h.Files {
		if strings.Contains(strings.ToLower(string(f.Content)), "canary") || strings.Contains(strings.ToLower(f.Path), "canary") {
			t.Errorf("%s mentions canary", f.Path)
		}
	}
}

func TestEnv(t *testing.T) {
	h := build(t, "fixture")
	got := map[string]string{}
	for _, kv := range h.Env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	for k, want := range map[string]string{"HOME": h.HomeDir, "USER": h.User, "LOGNAME": h.User, "SHELL": "/bin/bash", "LANG": "en_US.UTF-8"} {
		if got[k] != want {
			t.Errorf("%s=%q, want %q", k, got[k], want)
		}
	}
	if !strings.Contains(got["PATH"], "/usr/bin") {
		t.Errorf("PATH=%q", got["PATH"])
	}
	for _, v := range canary.EnvVars {
		tok, ok := h.Token("env:"+v.Name, v.Kind)
		if !ok || got[v.Name] != tok.Value {
			t.Errorf("%s: %q, token %v", v.Name, got[v.Name], ok)
		}
	}
	for k := range got {
		for _, bad := range []string{"SANDBOX", "TRACE", "LD_PRELOAD", "PROXY", "CA_BUNDLE", "CANARY"} {
			if strings.Contains(strings.ToUpper(k), bad) {
				t.Errorf("env var %s gives the sandbox away", k)
			}
		}
	}
}

// TestNPMPrefix: global npm installs go to the user's prefix, as on a
// workstation whose owner followed npm's guide to EACCES errors: ~/.npmrc
// names it, it exists, and its bin is on PATH in the environment and in
// the shell's files, before the system's directories.
func TestNPMPrefix(t *testing.T) {
	h := build(t, "fixture")
	prefix := h.HomeDir + "/" + canaryfs.NPMPrefix
	files := map[string]canaryfs.File{}
	for _, f := range h.Files {
		files[f.Path] = f
	}
	if rc := string(files[h.HomeDir+"/.npmrc"].Content); !strings.Contains(rc, "\nprefix="+prefix+"\n") {
		t.Errorf(".npmrc = %q, want a prefix=%s line", rc, prefix)
	}
	for _, d := range []string{prefix + "/bin", prefix + "/lib/node_modules"} {
		if !files[d].Dir {
			t.Errorf("%s is not a directory of the home", d)
		}
	}
	for _, kv := range h.Env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			dirs := strings.Split(p, ":")
			i, j := slices.Index(dirs, prefix+"/bin"), slices.Index(dirs, "/usr/bin")
			if i < 0 || i > j {
				t.Errorf("PATH=%q: want %s/bin before /usr/bin", p, prefix)
			}
		}
	}
	for _, rc := range []string{".bashrc", ".zshrc", ".profile"} {
		if !strings.Contains(string(files[h.HomeDir+"/"+rc].Content), ".npm-global/bin:$PATH") {
			t.Errorf("~/%s does not put the npm prefix's bin on PATH", rc)
		}
	}
}

func TestSSH(t *testing.T) {
	h := build(t, "fixture")
	dir := t.TempDir()
	for _, name := range []string{"id_ed25519", "id_rsa"} {
		priv := file(t, h, "~/.ssh/"+name)
		if _, err := ssh.ParseRawPrivateKey(priv); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pub := file(t, h, "~/.ssh/"+name+".pub")
		if _, _, _, _, err := ssh.ParseAuthorizedKey(pub); err != nil {
			t.Fatalf("%s.pub: %v", name, err)
		}
		if f, _ := h.File("~/.ssh/" + name); f.Mode != 0o600 {
			t.Errorf("%s mode %v", name, f.Mode)
		}
		keygen, err := exec.LookPath("ssh-keygen")
		if err != nil {
			t.Log("no ssh-keygen on this host")
			continue
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, priv, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(keygen, "-y", "-f", p).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh-keygen -y %s: %v: %s", name, err, out)
		}
		if strings.TrimSpace(string(out)) != strings.TrimSpace(string(pub)) {
			t.Errorf("ssh-keygen -y %s = %q, want %q", name, out, pub)
		}
	}
	if f, _ := h.File("~/.ssh"); !f.Dir || f.Mode != 0o700 {
		t.Errorf("~/.ssh: %+v", f)
	}
	if _, _, _, _, err := ssh.ParseAuthorizedKey(file(t, h, "~/.ssh/authorized_keys")); err != nil {
		t.Error(err)
	}
	if !bytes.Contains(file(t, h, "~/.ssh/config"), []byte("Host bastion")) {
		t.Error("~/.ssh/config")
	}
	kh := bufio.NewScanner(bytes.NewReader(file(t, h, "~/.ssh/known_hosts")))
	for kh.Scan() {
		if _, _, _, _, _, err := ssh.ParseKnownHosts(kh.Bytes()); err != nil {
			t.Errorf("known_hosts line %q: %v", kh.Text(), err)
		}
	}
}

// ini parses the subset of INI that AWS, pypirc and gcloud use, failing on
// anything else.
func ini(t *testing.T, b []byte) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	sec, lastKey := "", ""
	for i, l := range strings.Split(string(b), "\n") {
		cont := strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			sec = l[1 : len(l)-1]
			out[sec] = map[string]string{}
		case cont && lastKey != "": // continuation line
			out[sec][lastKey] += "\n" + l
		case strings.Contains(l, "=") && sec != "":
			k, v, _ := strings.Cut(l, "=")
			lastKey = strings.TrimSpace(k)
			out[sec][lastKey] = strings.TrimSpace(v)
		default:
			t.Fatalf("line %d: %q is not INI", i+1, l)
		}
	}
	return out
}

func TestCloudFormats(t *testing.T) {
	h := build(t, "fixture")
	creds := ini(t, file(t, h, "~/.aws/credentials"))
	for _, sec := range []string{"default", "prod-admin"} {
		tok, ok := h.Set.Lookup(findID(h, creds[sec]["aws_access_key_id"]))
		if !ok || tok.Kind != canary.AWSAccessKey || len(creds[sec]["aws_secret_access_key"]) != 40 {
			t.Errorf("[%s] %v", sec, creds[sec])
		}
	}
	if ini(t, file(t, h, "~/.aws/config"))["profile prod-admin"]["region"] == "" {
		t.Error("~/.aws/config has no prod-admin region")
	}
	if findID(h, ini(t, file(t, h, "~/.pypirc"))["pypi"]["password"]) == "" {
		t.Error("~/.pypirc password is not a token")
	}
	ini(t, file(t, h, "~/.config/gcloud/configurations/config_default"))

	var kube struct {
		Clusters []struct {
			Cluster struct {
				CA     string `yaml:"certificate-authority-data"`
				Server string
			}
		}
		Users []struct {
			User struct{ Token string }
		}
		CurrentContext string `yaml:"current-context"`
	}
	if err := yaml.Unmarshal(file(t, h, "~/.kube/config"), &kube); err != nil {
		t.Fatalf("kube config: %v", err)
	}
	if len(kube.Users) != 1 || findID(h, kube.Users[0].User.Token) == "" || kube.CurrentContext == "" || len(kube.Clusters) != 1 {
		t.Fatalf("kube config: %+v", kube)
	}
	caPEM, _ := base64.StdEncoding.DecodeString(kube.Clusters[0].Cluster.CA)
	blk, _ := pem.Decode(caPEM)
	if blk == nil {
		t.Fatal("kube CA is not PEM")
	}
	if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
		t.Errorf("kube CA: %v", err)
	}
	var gh map[string]struct {
		OAuthToken string `yaml:"oauth_token"`
		User       string
	}
	if err := yaml.Unmarshal(file(t, h, "~/.config/gh/hosts.yml"), &gh); err != nil || findID(h, gh["github.com"].OAuthToken) == "" {
		t.Errorf("gh hosts.yml: %v %+v", err, gh)
	}
	var docker struct {
		Auths map[string]struct{ Auth string }
	}
	if err := json.Unmarshal(file(t, h, "~/.docker/config.json"), &docker); err != nil {
		t.Fatal(err)
	}
	for reg, a := range docker.Auths {
		up, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil || !strings.HasPrefix(string(up), h.User+":") {
			t.Errorf("docker auth for %s: %q %v", reg, up, err)
		}
	}
	// Every JSON file parses.
	for _, f := range h.Files {
		if strings.HasSuffix(f.Path, ".json") || strings.HasSuffix(f.Path, "/Preferences") || strings.HasSuffix(f.Path, "/Local State") ||
			strings.HasSuffix(f.Path, "/Bookmarks") || strings.HasSuffix(f.Path, "default_wallet") || strings.Contains(f.Path, "/keystore/UTC--") {
			if !json.Valid(f.Content) {
				t.Errorf("%s is not valid JSON", f.Path)
			}
		}
	}
}

// openDB writes content to a temporary file and opens it as SQLite.
func openDB(t *testing.T, content []byte) *sql.DB {
	t.Helper()
	p := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSQLite(t *testing.T) {
	h := build(t, "fixture")
	chrome := "~/.config/google-chrome/Default/"
	rows, err := openDB(t, file(t, h, chrome+"Login Data")).Query(`SELECT origin_url, username_value, password_value FROM logins ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var origin, user string
		var enc []byte
		if err := rows.Scan(&origin, &user, &enc); err != nil {
			t.Fatal(err)
		}
		pw, ok := testenv.ChromeDecrypt(enc)
		if !ok || findID(h, string(pw)) == "" {
			t.Errorf("Login Data %s: password does not decrypt to a token", origin)
		}
		n++
	}
	if n < 3 {
		t.Errorf("Login Data: %d logins", n)
	}
	rows, err = openDB(t, file(t, h, chrome+"Cookies")).Query(`SELECT host_key, name, encrypted_value FROM cookies`)
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for rows.Next() {
		var host, name string
		var enc []byte
		if err := rows.Scan(&host, &name, &enc); err != nil {
			t.Fatal(err)
		}
		v, ok := testenv.ChromeDecrypt(enc)
		sum := sha256.Sum256([]byte(host))
		if !ok || !bytes.HasPrefix(v, sum[:]) || findID(h, string(v[32:])) == "" {
			t.Errorf("Cookies %s %s: value does not decrypt to a token", host, name)
		}
		n++
	}
	if n < 3 {
		t.Errorf("Cookies: %d rows", n)
	}
	var visited int
	if err := openDB(t, file(t, h, chrome+"History")).QueryRow(`SELECT count(*) FROM urls`).Scan(&visited); err != nil || visited < 5 {
		t.Errorf("History: %v, %d urls", err, visited)
	}
	var cred []byte
	if err := openDB(t, file(t, h, "~/.config/gcloud/credentials.db")).QueryRow(`SELECT value FROM credentials`).Scan(&cred); err != nil {
		t.Fatal(err)
	}
	var c struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal(cred, &c); err != nil || findID(h, c.RefreshToken) == "" {
		t.Errorf("gcloud credentials.db: %v %q", err, c.RefreshToken)
	}
	ff := glob(h, "~/.mozilla/firefox/*/cookies.sqlite")
	if len(ff) != 1 {
		t.Fatalf("firefox cookies: %d", len(ff))
	}
	var v string
	if err := openDB(t, ff[0].Content).QueryRow(`SELECT value FROM moz_cookies WHERE id = 1`).Scan(&v); err != nil || findID(h, v) == "" {
		t.Errorf("cookies.sqlite: %v %q", err, v)
	}
	var item1 []byte
	if err := openDB(t, glob(h, "~/.mozilla/firefox/*/key4.db")[0].Content).QueryRow(`SELECT item1 FROM metaData WHERE id = 'password'`).Scan(&item1); err != nil || len(item1) != 20 {
		t.Errorf("key4.db: %v", err)
	}
	var logins struct {
		Logins []struct {
			Hostname, EncryptedPassword string
		}
		Version int
	}
	if err := json.Unmarshal(glob(h, "~/.mozilla/firefox/*/logins.json")[0].Content, &logins); err != nil || len(logins.Logins) == 0 || logins.Version != 3 {
		t.Fatalf("logins.json: %v %+v", err, logins)
	}
	for _, l := range logins.Logins {
		if findID(h, l.EncryptedPassword) == "" {
			t.Errorf("logins.json %s: password is not a token", l.Hostname)
		}
	}
}

func TestWallets(t *testing.T) {
	h := build(t, "fixture")
	ks := glob(h, "~/.ethereum/keystore/UTC--*")
	if len(ks) != 1 {
		t.Fatalf("%d keystores", len(ks))
	}
	var k canary.Keystore
	if err := json.Unmarshal(ks[0].Content, &k); err != nil || k.Version != 3 || !strings.HasSuffix(ks[0].Path, "--"+k.Address) {
		t.Fatalf("keystore: %v %+v", err, k)
	}
	_, pw, _ := strings.Cut(string(file(t, h, "~/Documents/passwords.txt")), "eth keystore: ")
	if _, ok := testenv.DecryptKeystore(string(ks[0].Content), strings.TrimSpace(pw)); !ok {
		t.Error("keystore does not decrypt with the noted password")
	}
	var id []int
	if err := json.Unmarshal(file(t, h, "~/.config/solana/id.json"), &id); err != nil || len(id) != 64 {
		t.Errorf("solana id.json: %v %d", err, len(id))
	}
	for _, p := range []string{"~/Documents/seed.txt", "~/Desktop/mnemonic.txt"} {
		lines := strings.Split(strings.TrimSpace(string(file(t, h, p))), "\n")
		if !testenv.ValidMnemonic(lines[len(lines)-1]) {
			t.Errorf("%s: %q is not a valid mnemonic", p, lines[len(lines)-1])
		}
	}
	wd := file(t, h, "~/.bitcoin/wallet.dat")
	if len(wd) < 8192 || !bytes.Equal(wd[12:16], []byte{0x62, 0x31, 0x05, 0x00}) {
		t.Error("wallet.dat has no Berkeley DB B-tree magic")
	}
	if !bytes.HasPrefix(file(t, h, "~/.config/Exodus/exodus.wallet/seed.seco"), []byte("SECO")) {
		t.Error("seed.seco")
	}
	// The MetaMask vault is in a LevelDB log record of the right length.
	loc := "~/.config/google-chrome/Default/Local Extension Settings/nkbihfbeogaeaoehlefnkodbefgpgknn/000003.log"
	log := file(t, h, loc)
	tok, ok := h.Token(loc, canary.WalletVault)
	if !ok || !bytes.Contains(log, []byte(tok.Needles[0])) || int(log[4])|int(log[5])<<8 != len(log)-7 || log[6] != 1 {
		t.Error("MetaMask leveldb log")
	}
}

func TestLivedIn(t *testing.T) {
	h := build(t, "fixture")
	count := func(dir string) int {
		n := 0
		for _, f := range h.Files {
			if path.Dir(f.Path) == path.Join(h.HomeDir, dir) {
				n++
			}
		}
		return n
	}
	for dir, least := range map[string]int{"": 10, "Desktop": 3, "Documents": 3, "Downloads": 3, "projects": 2} {
		if n := count(dir); n < least {
			t.Errorf("~/%s has %d entries, want at least %d", dir, n, least)
		}
	}
	recent, times := 0, map[time.Time]bool{}
	for _, f := range h.Files {
		// Nothing younger than ten minutes: a file dated at the trace's
		// start tells the skill the home was made for it.
		if now.Sub(f.ModTime) < 10*time.Minute || f.ModTime.Before(now.AddDate(-3, 0, 0)) {
			t.Errorf("%s: mtime %v", f.Path, f.ModTime)
		}
		if now.Sub(f.ModTime) < 24*time.Hour {
			recent++
		}
		times[f.ModTime] = true
	}
	if recent < 10 || len(times) < len(h.Files)/4 {
		t.Errorf("%d files modified in the last day, %d distinct mtimes of %d", recent, len(times), len(h.Files))
	}
	for _, f := range glob(h, "**/*.png") {
		if _, err := png.Decode(bytes.NewReader(f.Content)); err != nil {
			t.Errorf("%s: %v", f.Path, err)
		}
	}
	for _, f := range glob(h, "**/*.pdf") {
		if !bytes.HasPrefix(f.Content, []byte("%PDF-1.")) || !bytes.HasSuffix(f.Content, []byte("%%EOF\n")) {
			t.Errorf("%s is not a PDF", f.Path)
		}
	}
	for _, f := range glob(h, "**/*.zip") {
		if _, err := zip.NewReader(bytes.NewReader(f.Content), int64(len(f.Content))); err != nil {
			t.Errorf("%s: %v", f.Path, err)
		}
	}
}

func TestGitRepos(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on this host")
	}
	h := build(t, "fixture")
	root := t.TempDir()
	if err := h.WriteDir(root); err != nil {
		t.Fatal(err)
	}
	repos := glob(h, "~/projects/*/.git/HEAD")
	if len(repos) < 2 {
		t.Fatalf("%d repos", len(repos))
	}
	for _, r := range repos {
		dir := filepath.Join(root, filepath.Dir(filepath.Dir(r.Path)))
		run := func(args ...string) string {
			cmd := exec.Command(gitBin, append([]string{"-C", dir}, args...)...)
			cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("git %v in %s: %v: %s", args, dir, err, out)
			}
			return string(out)
		}
		if n := strings.Count(run("log", "--oneline"), "\n"); n < 5 {
			t.Errorf("%s: %d commits", dir, n)
		}
		run("fsck", "--strict")
		for _, l := range strings.Split(strings.TrimSpace(run("status", "--porcelain")), "\n") {
			if l != "" && !strings.HasPrefix(l, "?? ") {
				t.Errorf("%s: tracked file changed: %q", dir, l)
			}
		}
		if !strings.Contains(run("remote", "-v"), "git@github.com:") {
			t.Errorf("%s: no origin remote", dir)
		}
		if !strings.Contains(run("check-ignore", ".env"), ".env") {
			t.Errorf("%s: .env not ignored", dir)
		}
	}
}

func TestWriteTar(t *testing.T) {
	h := build(t, "fixture")
	tr := tar.NewReader(bytes.NewReader(tarBytes(t, h)))
	n := 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Uid != 1000 || hdr.Gid != 1000 || !strings.HasPrefix(hdr.Name, "home/"+h.User) {
			t.Errorf("%s: uid %d gid %d", hdr.Name, hdr.Uid, hdr.Gid)
		}
		n++
	}
	if n != len(h.Files) {
		t.Errorf("tar has %d entries, home %d", n, len(h.Files))
	}
}

func TestOptions(t *testing.T) {
	for _, bad := range []string{"root", "user", "sandbox", "test", "Bad Name", "x/y"} {
		if _, err := canaryfs.Build(canaryfs.Options{User: bad, Seed: []byte("x"), Now: now}); err == nil {
			t.Errorf("Build(User: %q) succeeded", bad)
		}
	}
	h, err := canaryfs.Build(canaryfs.Options{User: "jdoe", Hostname: "jdoe-laptop", Seed: []byte("x"), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if h.User != "jdoe" || h.Hostname != "jdoe-laptop" || h.HomeDir != "/home/jdoe" {
		t.Errorf("got %s %s %s", h.User, h.Hostname, h.HomeDir)
	}
	users := map[string]bool{}
	for i := range 5 {
		h := build(t, fmt.Sprint("names", i))
		users[h.User] = true
		if strings.Contains(h.Hostname, "sandbox") || !strings.HasPrefix(h.HomeDir, "/home/") {
			t.Errorf("default user %q host %q", h.User, h.Hostname)
		}
	}
	if len(users) < 3 {
		t.Errorf("default users not varied: %v", users)
	}
}

// TestNothingOfTheHostHome checks that the home is generated, not copied:
// no file of the real home has its content at the same place in the
// generated one, and neither the real git identity nor the host name
// appears anywhere in it.
func TestNothingOfTheHostHome(t *testing.T) {
	h := build(t, "fixture")
	real, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	var needles []string
	if hn, err := os.Hostname(); err == nil && len(hn) >= 4 {
		needles = append(needles, hn)
	}
	if gc, err := os.ReadFile(filepath.Join(real, ".gitconfig")); err == nil {
		for _, l := range strings.Split(string(gc), "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && (strings.TrimSpace(k) == "name" || strings.TrimSpace(k) == "email") {
				if v = strings.TrimSpace(v); len(v) >= 4 {
					needles = append(needles, v)
				}
			}
		}
	}
	checked := 0
	filepath.WalkDir(real, func(p string, d os.DirEntry, err error) error {
		if err != nil || checked > 2000 {
			return filepath.SkipDir
		}
		if d.IsDir() && strings.Count(strings.TrimPrefix(p, real), "/") > 3 {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		checked++
		rel, _ := filepath.Rel(real, p)
		if f, ok := h.File(path.Join(h.HomeDir, filepath.ToSlash(rel))); ok {
			if content, err := os.ReadFile(p); err == nil && len(content) > 0 && bytes.Equal(content, f.Content) {
				t.Errorf("~/%s has the host's content", rel)
			}
		}
		return nil
	})
	for _, f := range h.Files {
		for _, n := range needles {
			if bytes.Contains(f.Content, []byte(n)) || strings.Contains(f.Path, n) {
				t.Errorf("%s contains the host's %q", f.Path, n)
			}
		}
	}
	t.Logf("compared %d files of %s; %d identity strings", checked, real, len(needles))
}

func TestGoldenListing(t *testing.T) {
	h, err := canaryfs.Build(canaryfs.Options{User: "mwalker", Hostname: "mwalker-thinkpad", Seed: []byte("golden"), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, f := range h.Files {
		kind := "f"
		switch {
		case f.Dir:
			kind = "d"
		case f.Symlink != "":
			kind = "l"
		}
		fmt.Fprintf(&buf, "%s %04o ~%s\n", kind, f.Mode.Perm(), strings.TrimPrefix(f.Path, h.HomeDir))
	}
	golden := filepath.Join("testdata", "files.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("file listing mismatch (-want +got):\n%s", diff)
	}
}

// TestProject: the home names its main project, a git repository whose
// git-ignored .env holds canaries, on Linux and on a Mac.
func TestProject(t *testing.T) {
	for _, tc := range []struct {
		name string
		home *canaryfs.Home
	}{
		{"linux", build(t, "fixture")},
		{"linux, another seed", build(t, "project-2")},
		{"macos", buildMac(t, "fixture")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.home
			if !strings.HasPrefix(h.Project, h.HomeDir+"/projects/") {
				t.Fatalf("Project = %q, want a folder of %s/projects", h.Project, h.HomeDir)
			}
			if _, ok := h.File(h.Project + "/.git/HEAD"); !ok {
				t.Errorf("%s is not a git repository", h.Project)
			}
			env := file(t, h, h.Project+"/.env")
			if hits := h.Set.Find(env); len(hits) == 0 {
				t.Errorf("%s/.env holds no canary: %q", h.Project, env)
			}
		})
	}
}

func TestRepos(t *testing.T) {
	h := build(t, "seed-repos")
	repos := h.Repos()
	if _, ok := repos[h.Project]; !ok {
		t.Fatalf("Repos() = %v, want the main project %s among them", repos, h.Project)
	}
	for dir, r := range repos {
		n := r.Files
		if n < 3 {
			t.Errorf("repository %s has %d files outside .git, want a lived-in working tree", dir, n)
		}
		count := 0
		for _, f := range h.Files {
			if !f.Dir && f.Symlink == "" && strings.HasPrefix(f.Path, dir+"/") && !strings.HasPrefix(f.Path, dir+"/.git/") {
				count++
			}
		}
		if count != n {
			t.Errorf("repository %s: Repos() counts %d files, the home holds %d", dir, n, count)
		}
	}
}

// TestBeginIdentity: the identity Begin gives before the files are made is
// the finished home's, for each persona, and Begin then Finish is Build.
func TestBeginIdentity(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts canaryfs.Options
	}{
		{name: "linux", opts: canaryfs.Options{Seed: []byte("identity"), Now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}},
		{name: "macos", opts: canaryfs.Options{Seed: []byte("identity"), Now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Persona: persona.MacOS}},
		{name: "named", opts: canaryfs.Options{Seed: []byte("identity"), User: "jchen", Hostname: "build-box", Now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := canaryfs.Begin(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			id := x.Identity
			h, err := x.Finish()
			if err != nil {
				t.Fatal(err)
			}
			shell := ""
			for _, kv := range h.Env {
				if v, ok := strings.CutPrefix(kv, "SHELL="); ok {
					shell = v
				}
			}
			want := canaryfs.Identity{User: h.User, FullName: h.FullName, Hostname: h.Hostname, HomeDir: h.HomeDir, Shell: shell}
			if id != want {
				t.Errorf("Begin's identity %+v, finished home's %+v", id, want)
			}
			built, err := canaryfs.Build(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if built.Set.Len() != h.Set.Len() || built.Since != h.Since || len(built.Files) != len(h.Files) {
				t.Errorf("Begin+Finish differs from Build: %d/%d tokens, since %v/%v, %d/%d files",
					h.Set.Len(), built.Set.Len(), h.Since, built.Since, len(h.Files), len(built.Files))
			}
		})
	}
}

// TestNoFileDatedAtStart checks many seeds, not one: the youngest mtime is a
// random draw, and a home that dates a secret at the trace's start tells the
// skill it was made for it.
func TestNoFileDatedAtStart(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 3 // each home is a key search: the twelve in `make test`
	}
	for i := range seeds {
		h := fresh(t, fmt.Sprintf("dated-%d", i))
		for _, f := range h.Files {
			if age := now.Sub(f.ModTime); age < 10*time.Minute {
				t.Errorf("seed %d: %s dated %v before the start", i, f.Path, age)
			}
		}
	}
}

// TestBuckets: the S3 buckets a home declares as the user's own are the
// state backends of its Terraform files, wherever they are; other files
// and other backends declare none.
func TestBuckets(t *testing.T) {
	tf := func(p, s string) canaryfs.File { return canaryfs.File{Path: p, Content: []byte(s)} }
	h := &canaryfs.Home{Files: []canaryfs.File{
		tf("/home/u/projects/infra/main.tf", "terraform {\n  backend \"s3\" {\n    bucket = \"acme-tfstate\"\n    key    = \"prod/terraform.tfstate\"\n  }\n}\n"),
		tf("/home/u/projects/net/backend.tf", "terraform {\n  backend \"s3\" {\n    key = \"net\"\n    bucket = \"acme-net.state\"\n  }\n}\n"),
		tf("/home/u/projects/app/main.tf", "terraform {\n  backend \"gcs\" {\n    bucket = \"acme-gcs\"\n  }\n}\nresource \"aws_s3_bucket\" \"b\" {\n  bucket = \"acme-assets\"\n}\n"),
		tf("/home/u/notes.md", "backend \"s3\" { bucket = \"not-a-tf-file\" }"),
	}}
	if got, want := h.Buckets(), []string{"acme-net.state", "acme-tfstate"}; !slices.Equal(got, want) {
		t.Errorf("Buckets() = %q, want %q", got, want)
	}
	// A built home with its Terraform project declares that project's bucket.
	for _, seed := range []string{"fixture", "same", "other", "third"} {
		h := build(t, seed)
		_, infra := h.File(h.HomeDir + "/projects/infra/main.tf")
		if got := len(h.Buckets()); infra != (got == 1) {
			t.Errorf("seed %s: Terraform project %v, %d buckets %q", seed, infra, got, h.Buckets())
		}
	}
}
