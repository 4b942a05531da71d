package canaryfs_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/persona"
)

// buildMac returns the Mac home of seed, built once per test binary (as
// build does): tests only read it.
func buildMac(t testing.TB, seed string) *canaryfs.Home {
	t.Helper()
	homesMu.Lock()
	defer homesMu.Unlock()
	key := "macos\x00" + seed
	if h, ok := homes[key]; ok {
		return h
	}
	h, err := canaryfs.Build(canaryfs.Options{User: "mwalker", Seed: []byte(seed), Now: now, Persona: persona.MacOS})
	if err != nil {
		t.Fatal(err)
	}
	homes[key] = h
	return h
}

// keychainItems decodes the login keychain as the persona's shims do.
func keychainItems(t *testing.T, data []byte) (items []map[string]string, login string) {
	t.Helper()
	if !bytes.HasPrefix(data, []byte("kych\x00\x01\x00\x00")) {
		t.Fatalf("keychain header %q", data[:8])
	}
	off := binary.BigEndian.Uint32(data[12:16])
	key := data[off : off+16]
	n := binary.BigEndian.Uint32(data[off+16 : off+20])
	blob := data[off+20 : off+20+n]
	plain := make([]byte, len(blob))
	for i, c := range blob {
		plain[i] = c ^ key[i%16]
	}
	var doc struct {
		Items []map[string]string `json:"items"`
		Login string              `json:"login"`
	}
	if err := json.Unmarshal(plain, &doc); err != nil {
		t.Fatalf("keychain table: %v", err)
	}
	return doc.Items, doc.Login
}

func TestMacOSHome(t *testing.T) {
	h := buildMac(t, "mac")
	if h.HomeDir != "/Users/mwalker" || !strings.HasPrefix(h.Hostname, "mwalker-") {
		t.Fatalf("home %s host %s", h.HomeDir, h.Hostname)
	}
	for _, f := range h.Files {
		if !strings.HasPrefix(f.Path, h.HomeDir+"/") && f.Path != h.HomeDir {
			t.Errorf("%s outside the home", f.Path)
		}
		rel := strings.TrimPrefix(f.Path, h.HomeDir+"/")
		for _, linux := range []string{".config/google-chrome", ".mozilla", ".local/share/keyrings", ".config/Exodus",
			".bitcoin", ".ethereum", ".bashrc", ".config/user-dirs.dirs", "Templates", "Videos"} {
			if rel == linux || strings.HasPrefix(rel, linux+"/") {
				t.Errorf("a Mac has no %s", f.Path)
			}
		}
		if strings.Contains(string(f.Content), "/home/") {
			t.Errorf("%s names /home/", f.Path)
		}
	}
	for _, want := range []string{
		"Library/Application Support/Google/Chrome/Default/Login Data",
		"Library/Application Support/Google/Chrome/Default/Cookies",
		"Library/Application Support/Google/Chrome/Local State",
		"Library/Application Support/Exodus/exodus.wallet/seed.seco",
		"Library/Application Support/Bitcoin/wallet.dat",
		"Library/Application Support/Firefox/profiles.ini",
		"Library/Keychains/login.keychain-db",
		"Library/Cookies/Cookies.binarycookies",
		"Library/LaunchAgents/com.google.keystone.agent.plist",
		"Library/Preferences/.GlobalPreferences.plist",
		".zshrc", ".zprofile", ".ssh/id_ed25519", ".aws/credentials", "Movies", ".Trash",
	} {
		if _, ok := h.File("~/" + want); !ok {
			t.Errorf("no ~/%s", want)
		}
	}
	if !strings.Contains(string(file(t, h, "~/Library/Application Support/Firefox/profiles.ini")), "Path=Profiles/") {
		t.Error("profiles.ini does not point into Profiles/")
	}
	if len(glob(h, "~/Library/Application Support/Firefox/Profiles/*/logins.json")) != 1 {
		t.Error("no Firefox profile under Profiles/")
	}
	if len(glob(h, "~/Library/Ethereum/keystore/UTC--*")) != 1 {
		t.Error("no Ethereum keystore under ~/Library/Ethereum")
	}
	if len(glob(h, "~/Desktop/Screenshot * at *.png")) != 1 {
		t.Error("the screenshot has no macOS name")
	}

	env := map[string]string{}
	for _, kv := range h.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k, want := range map[string]string{"HOME": "/Users/mwalker", "SHELL": "/bin/zsh",
		"PATH": "/Users/mwalker/.npm-global/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "__CF_USER_TEXT_ENCODING": "0x1F5:0x0:0x0"} {
		if env[k] != want {
			t.Errorf("%s=%q, want %q", k, env[k], want)
		}
	}
	if env["OPENAI_API_KEY"] == "" {
		t.Error("the planted variables are gone")
	}
}

// Every token sits in the file its location names, where detection finds
// it; no token is left at a Linux place.
func TestMacOSTokensPlanted(t *testing.T) {
	h := buildMac(t, "mac")
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
}

func TestMacOSKeychain(t *testing.T) {
	h := buildMac(t, "mac")
	kc := file(t, h, "~/"+canaryfs.KeychainPath)
	items, login := keychainItems(t, kc)
	if login == "" || findID(h, login) == "" {
		t.Errorf("login password %q is not a token", login)
	}
	var safe string
	for _, it := range items {
		if findID(h, it["data"]) == "" {
			t.Errorf("keychain item %s/%s: secret is not a token", it["svce"], it["srvr"])
		}
		if it["svce"] == "Chrome Safe Storage" {
			safe = it["data"]
		}
	}
	if safe == "" {
		t.Fatal("no Chrome Safe Storage item")
	}
	for _, s := range append([]string{login}, safe) {
		if bytes.Contains(kc, []byte(s)) {
			t.Errorf("a keychain secret is in the file in plain text")
		}
	}
	tok, ok := h.Token("~/"+canaryfs.KeychainPath, canary.Password)
	if !ok || len(tok.RawNeedles) == 0 {
		t.Fatal("the login password has no raw needle")
	}

	// Chrome's saved passwords decrypt with the keychain's key, as on a Mac.
	rows, err := openDB(t, file(t, h, "~/Library/Application Support/Google/Chrome/Default/Login Data")).Query(`SELECT password_value FROM logins`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var enc []byte
		if err := rows.Scan(&enc); err != nil {
			t.Fatal(err)
		}
		pw, ok := testenv.ChromeDecryptMac(enc, safe)
		if !ok || findID(h, string(pw)) == "" {
			t.Error("Login Data: a password does not decrypt with the Safe Storage key")
		}
		if _, ok := testenv.ChromeDecrypt(enc); ok {
			if p, _ := testenv.ChromeDecrypt(enc); findID(h, string(p)) != "" {
				t.Error("Login Data decrypts with Linux's key on a Mac")
			}
		}
		n++
	}
	if n == 0 {
		t.Error("no logins")
	}
}

func TestMacOSSafariCookies(t *testing.T) {
	h := buildMac(t, "mac")
	data := file(t, h, "~/Library/Cookies/Cookies.binarycookies")
	if !bytes.HasPrefix(data, []byte("cook")) || binary.BigEndian.Uint32(data[4:]) != 1 {
		t.Fatalf("header %q", data[:8])
	}
	size := binary.BigEndian.Uint32(data[8:])
	page := data[12 : 12+size]
	n := binary.LittleEndian.Uint32(page[4:])
	if n == 0 {
		t.Fatal("no cookies")
	}
	for i := range n {
		off := binary.LittleEndian.Uint32(page[8+4*i:])
		c := page[off:]
		str := func(at int) string {
			o := binary.LittleEndian.Uint32(c[at:])
			return string(c[o : int(o)+bytes.IndexByte(c[o:], 0)])
		}
		domain, name, value := str(16), str(20), str(28)
		expiry := math.Float64frombits(binary.LittleEndian.Uint64(c[40:]))
		if !strings.HasPrefix(domain, ".") || name == "" || findID(h, value) == "" || expiry < 7e8 {
			t.Errorf("cookie %d: %s %s %v expires %v", i, domain, name, value != "", expiry)
		}
	}
}

// The Linux home is what it was: the persona changes nothing of it.
func TestPersonaLinuxDefault(t *testing.T) {
	a, b := fresh(t, "same"), build(t, "same")
	c, err := canaryfs.Build(canaryfs.Options{Seed: []byte("same"), Now: now, Persona: persona.Linux})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tarBytes(t, a), tarBytes(t, c)) || !bytes.Equal(tarBytes(t, b), tarBytes(t, c)) {
		t.Error("persona linux differs from the default")
	}
	if _, err := canaryfs.Build(canaryfs.Options{Persona: "windows"}); err == nil {
		t.Error("an unknown persona was accepted")
	}
}

func TestMacOSGoldenListing(t *testing.T) {
	h, err := canaryfs.Build(canaryfs.Options{User: "mwalker", Hostname: "mwalker-mbp", Seed: []byte("golden"), Now: now, Persona: persona.MacOS})
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
	golden := filepath.Join("testdata", "files-macos.golden")
	if *update {
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
