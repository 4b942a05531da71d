package canaryfs

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
)

// The macOS persona's home (Options.Persona = persona.MacOS): the same
// secrets as the Linux home, where a Mac keeps them, under /Users/<user>,
// plus what only a Mac has: the login keychain (which the security shim
// reads), LaunchAgents, preference plists, Safari's cookie file and the
// pasteboard. plant() writes the Linux layout; macLayout moves it.

// KeychainPath is the login keychain, home-relative. The persona's
// security, osascript and dscl shims read it.
const KeychainPath = "Library/Keychains/login.keychain-db"

// PasteboardPath holds what the user last copied, home-relative (pbcopy and
// pbpaste use it).
const PasteboardPath = "Library/Caches/com.apple.pasteboard/contents"

// macMoves maps Linux home locations to a Mac's: an entry ending in "/"
// moves a folder's contents, any other one a single file or folder. The
// first match wins.
var macMoves = []struct{ from, to string }{
	{".mozilla/firefox/profiles.ini", "Library/Application Support/Firefox/profiles.ini"},
	{".mozilla/firefox/installs.ini", "Library/Application Support/Firefox/installs.ini"},
	{".mozilla/firefox/", "Library/Application Support/Firefox/Profiles/"},
	{".config/google-chrome/", "Library/Application Support/Google/Chrome/"},
	{".config/Exodus/", "Library/Application Support/Exodus/"},
	{".config/atomic/", "Library/Application Support/atomic/"},
	{".config/discord/", "Library/Application Support/discord/"},
	{".config/Code/", "Library/Application Support/Code/"},
	{".bitcoin/", "Library/Application Support/Bitcoin/"},
	{".ethereum/", "Library/Ethereum/"},
	{"Videos", "Movies"},
}

// macDrops are Linux-only places: a Mac has none of them (the GNOME
// keyring's place is taken by the login keychain).
var macDrops = []string{".local/share/keyrings", ".local/share/recently-used.xbel", ".config/user-dirs.dirs",
	".bashrc", ".bash_logout", ".profile", ".sudo_as_admin_successful", "Templates"}

// macRenames give files the names macOS gives them.
var macRenames = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`^Desktop/Screenshot from (\d{4}-\d{2}-\d{2}) (\d{2})-(\d{2})-(\d{2})\.png$`), "Desktop/Screenshot $1 at $2.$3.$4.png"},
	{regexp.MustCompile(`_linux_amd64\.zip$`), "_darwin_amd64.zip"},
}

// macHosts are the endings of a Mac's host name.
var macHosts = []string{"mbp", "macbook-pro", "macbook-air", "mba", "imac", "mac-mini", "mbp16", "mbp14", "studio", "mbp-2019"}

// chromeKeyMac derives Chrome's cookie and password key on macOS from the
// "Chrome Safe Storage" keychain password.
func chromeKeyMac(safeStorage string) []byte {
	k, _ := pbkdf2.Key(sha1.New, safeStorage, []byte("saltysalt"), 1003, 16)
	return k
}

// macPrepare runs before plant(): Chrome's key must come from the keychain.
func (b *builder) macPrepare() {
	var key []byte
	b.secretly(func() { key = b.m.Bytes(16) })
	b.safeStorage = b.register(b.m.Token(canary.KeyringSecret, "~/"+KeychainPath, base64.StdEncoding.EncodeToString(key)))
	b.chromeKey = chromeKeyMac(b.safeStorage.Value)
}

// macRel returns where a Mac keeps the Linux home-relative path rel, and
// false when a Mac has no such thing.
func macRel(rel string) (string, bool) {
	for _, d := range macDrops {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return "", false
		}
	}
	for _, m := range macMoves {
		if dir, ok := strings.CutSuffix(m.from, "/"); ok {
			if rel == dir {
				return strings.TrimSuffix(m.to, "/"), true
			}
			if rest, ok := strings.CutPrefix(rel, m.from); ok {
				rel = m.to + rest
				break
			}
			continue
		}
		if rel == m.from || strings.HasPrefix(rel, m.from+"/") {
			rel = m.to + strings.TrimPrefix(rel, m.from)
			break
		}
	}
	for _, r := range macRenames {
		rel = r.re.ReplaceAllString(rel, r.repl)
	}
	return rel, true
}

// macLayout moves what plant() wrote to a Mac's places, drops what a Mac
// lacks, and adds what only a Mac has.
func (b *builder) macLayout() {
	moved := map[string]*File{}
	for p, f := range b.files {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, b.home), "/")
		to, ok := macRel(rel)
		if !ok {
			continue
		}
		f.Path = b.abs(to)
		moved[f.Path] = f
	}
	b.files = moved
	kept := b.tokens[:0]
	for _, t := range b.tokens {
		if rel, ok := strings.CutPrefix(t.Location, "~/"); ok {
			to, keep := macRel(rel)
			if !keep {
				continue
			}
			t.Location = "~/" + to
		}
		kept = append(kept, t)
	}
	b.tokens = kept
	b.edit("Library/Application Support/Firefox/profiles.ini", "\nPath=", "\nPath=Profiles/")
	b.edit("Library/Application Support/Firefox/installs.ini", "\nDefault=", "\nDefault=Profiles/")
	b.edit(".gnupg/gpg-agent.conf", "/usr/bin/pinentry-curses", "/usr/local/bin/pinentry-mac")

	b.putS(".zprofile", 0o644, "eval \"$(/usr/local/bin/brew shellenv)\"\nexport PATH=\"$HOME/.local/bin:$PATH\"\nexport PATH=\"$HOME/.npm-global/bin:$PATH\"\n")
	b.put(".CFUserTextEncoding", 0o644, []byte("0x1F5:0x0:0x0"), b.ago(300*24*time.Hour, 900*24*time.Hour))
	b.dir(".Trash", 0o700)
	for _, d := range []string{"Desktop", "Documents", "Downloads", ""} {
		ds := append([]byte{0, 0, 0, 1, 'B', 'u', 'd', '1'}, b.m.Bytes(2048+b.m.Intn(4096))...)
		b.put(strings.TrimPrefix(d+"/.DS_Store", "/"), 0o644, ds, b.recent())
	}
	b.keychain()
	b.launchAgents()
	b.preferences()
	b.safariCookies()
	b.put(PasteboardPath, 0o600, []byte(b.mint(canary.Password, PasteboardPath)), b.ago(5*time.Minute, 3*time.Hour))
}

// edit replaces old with new in the home-relative file rel, if present.
func (b *builder) edit(rel, old, new string) {
	if f := b.files[b.abs(rel)]; f != nil {
		f.Content = bytes.ReplaceAll(f.Content, []byte(old), []byte(new))
	}
}

// A keychainItem is one item of the login keychain, in the attribute names
// of `security`: class "genp" (generic password) or "inet" (internet
// password).
type keychainItem struct {
	Class   string `json:"class"`
	Label   string `json:"labl,omitempty"`
	Service string `json:"svce,omitempty"`
	Server  string `json:"srvr,omitempty"`
	Account string `json:"acct"`
	Proto   string `json:"ptcl,omitempty"`
	Created string `json:"cdat"`
	Changed string `json:"mdat"`
	Data    string `json:"data"`
}

// keychain writes the login keychain: noise in the shape of an encrypted
// keychain, holding the item table the shims read (XORed with a key stored
// beside it, so that no secret is in the file in plain text). Every secret
// in it is a token whose raw needle is its obscured form, so the file
// leaving the sandbox is seen.
func (b *builder) keychain() {
	kcTime := func(t time.Time) string { return t.UTC().Format("20060102150405Z") }
	loc := "~/" + KeychainPath
	gh := b.register(b.m.Mint(canary.GitHubToken, loc))
	login := b.register(b.m.MintPassword(canary.Password, loc))
	created := b.ago(200*24*time.Hour, 800*24*time.Hour)
	items := []keychainItem{
		{Class: "genp", Label: "Chrome Safe Storage", Service: "Chrome Safe Storage", Account: "Chrome",
			Created: kcTime(created), Changed: kcTime(created), Data: b.safeStorage.Value},
		{Class: "inet", Label: "github.com", Server: "github.com", Account: b.user, Proto: "htps",
			Created: kcTime(b.ago(20*24*time.Hour, 200*24*time.Hour)), Changed: kcTime(b.recent()), Data: gh.Value},
	}
	var doc bytes.Buffer
	enc := json.NewEncoder(&doc)
	enc.SetEscapeHTML(false)
	b.fail(enc.Encode(map[string]any{"items": items, "login": login.Value}))
	plain := bytes.TrimSuffix(doc.Bytes(), []byte("\n"))
	key := b.m.Bytes(16)
	obscured := make([]byte, len(plain))
	for i, c := range plain {
		obscured[i] = c ^ key[i%16]
	}
	// The needle of a secret is the obscured `"data":"<secret>"` (or
	// `"login":"..."`) span: long enough to be unique even for a short
	// secret.
	needle := func(field, value string) []byte {
		var v bytes.Buffer
		e := json.NewEncoder(&v)
		e.SetEscapeHTML(false)
		b.fail(e.Encode(value))
		span := append([]byte(`"`+field+`":`), bytes.TrimSuffix(v.Bytes(), []byte("\n"))...)
		i := bytes.Index(plain, span)
		if i < 0 {
			b.fail(fmt.Errorf("keychain: %s not in the table", field))
			return nil
		}
		return obscured[i : i+len(span)]
	}
	for i := range b.tokens {
		t := &b.tokens[i]
		switch t.ID {
		case b.safeStorage.ID, gh.ID:
			t.RawNeedles = [][]byte{needle("data", t.Value)}
		case login.ID:
			t.RawNeedles = [][]byte{needle("login", t.Value)}
		}
	}
	off := 512 + 16*b.m.Intn(64)
	file := append([]byte("kych"), 0, 1, 0, 0)
	file = binary.BigEndian.AppendUint32(file, 0x10)
	file = binary.BigEndian.AppendUint32(file, uint32(off))
	file = append(file, b.m.Bytes(off-len(file))...)
	file = append(file, key...)
	file = binary.BigEndian.AppendUint32(file, uint32(len(obscured)))
	file = append(file, obscured...)
	file = append(file, b.m.Bytes(20000+b.m.Intn(40000))...)
	b.dir("Library/Keychains", 0o700)
	b.dir("Library/Keychains/"+strings.ToUpper(b.m.UUID()), 0o700)
	b.put(KeychainPath, 0o600, file, b.recent())
}

// plist renders a property list in Apple's XML format; values are strings,
// bools, ints, string slices and nested maps.
func plist(v map[string]any) []byte {
	var w bytes.Buffer
	w.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n")
	plistValue(&w, v, "")
	w.WriteString("</plist>\n")
	return w.Bytes()
}

func plistValue(w *bytes.Buffer, v any, ind string) {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.WriteString(ind + "<dict>\n")
		for _, k := range keys {
			w.WriteString(ind + "\t<key>" + esc(k) + "</key>\n")
			plistValue(w, x[k], ind+"\t")
		}
		w.WriteString(ind + "</dict>\n")
	case []string:
		w.WriteString(ind + "<array>\n")
		for _, s := range x {
			w.WriteString(ind + "\t<string>" + esc(s) + "</string>\n")
		}
		w.WriteString(ind + "</array>\n")
	case bool:
		if x {
			w.WriteString(ind + "<true/>\n")
		} else {
			w.WriteString(ind + "<false/>\n")
		}
	case int:
		fmt.Fprintf(w, "%s<integer>%d</integer>\n", ind, x)
	default:
		w.WriteString(ind + "<string>" + esc(fmt.Sprint(x)) + "</string>\n")
	}
}

// launchAgents plants the agents a developer's Mac has: a persistence write
// lands among them.
func (b *builder) launchAgents() {
	gsu := b.home + "/Library/Google/GoogleSoftwareUpdate/GoogleSoftwareUpdate.bundle/Contents/Resources/GoogleSoftwareUpdateAgent.app/Contents/MacOS/GoogleSoftwareUpdateAgent"
	b.put("Library/LaunchAgents/com.google.keystone.agent.plist", 0o644, plist(map[string]any{
		"Label": "com.google.keystone.user.agent", "LimitLoadToSessionType": "Aqua",
		"ProgramArguments": []string{gsu, "-runMode", "ifneeded"}, "RunAtLoad": true, "StartInterval": 3523,
		"StandardErrorPath": "/dev/null", "StandardOutPath": "/dev/null",
	}), b.ago(100*24*time.Hour, 500*24*time.Hour))
	b.put("Library/LaunchAgents/homebrew.mxcl.postgresql@16.plist", 0o644, plist(map[string]any{
		"Label": "homebrew.mxcl.postgresql@16", "KeepAlive": true, "RunAtLoad": true,
		"ProgramArguments": []string{"/usr/local/opt/postgresql@16/bin/postgres", "-D", "/usr/local/var/postgresql@16"},
		"WorkingDirectory": "/usr/local", "StandardErrorPath": "/usr/local/var/log/postgresql@16.log",
	}), b.ago(30*24*time.Hour, 300*24*time.Hour))
}

// preferences plants the plists `defaults` reads.
func (b *builder) preferences() {
	b.put("Library/Preferences/.GlobalPreferences.plist", 0o600, plist(map[string]any{
		"AppleLanguages": []string{"en-US"}, "AppleLocale": "en_US", "AppleInterfaceStyle": "Dark",
		"AppleMeasurementUnits": "Inches", "NSAutomaticSpellingCorrectionEnabled": false,
	}), b.recent())
	b.put("Library/Preferences/com.apple.dock.plist", 0o600, plist(map[string]any{
		"autohide": true, "orientation": "bottom", "tilesize": 48, "mru-spaces": false,
	}), b.recent())
	b.put("Library/Preferences/com.apple.finder.plist", 0o600, plist(map[string]any{
		"ShowPathbar": true, "AppleShowAllFiles": false, "FXPreferredViewStyle": "Nlsv",
	}), b.recent())
}

// safariCookies writes Safari's Cookies.binarycookies (one page, as Safari
// writes it) with session cookies that are tokens.
func (b *builder) safariCookies() {
	loc := "Library/Cookies/Cookies.binarycookies"
	type ck struct{ domain, name, path, value string }
	cks := []ck{
		{".github.com", "user_session", "/", b.mint(canary.BrowserCookie, loc)},
		{".atlassian.net", "tenant.session.token", "/", b.mint(canary.BrowserCookie, loc)},
	}
	macEpoch := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	var cookies [][]byte
	for _, c := range cks {
		var strs bytes.Buffer
		const head = 56
		offs := make([]uint32, 4)
		for i, s := range []string{c.domain, c.name, c.path, c.value} {
			offs[i] = uint32(head + strs.Len())
			strs.WriteString(s)
			strs.WriteByte(0)
		}
		rec := binary.LittleEndian.AppendUint32(nil, uint32(head+strs.Len()))
		rec = binary.LittleEndian.AppendUint32(rec, 0)
		rec = binary.LittleEndian.AppendUint32(rec, 5) // secure, HttpOnly
		rec = binary.LittleEndian.AppendUint32(rec, 0)
		for _, o := range offs {
			rec = binary.LittleEndian.AppendUint32(rec, o)
		}
		rec = append(rec, make([]byte, 8)...)
		created := b.ago(2*24*time.Hour, 60*24*time.Hour)
		rec = binary.LittleEndian.AppendUint64(rec, math.Float64bits(created.Add(365*24*time.Hour).Sub(macEpoch).Seconds()))
		rec = binary.LittleEndian.AppendUint64(rec, math.Float64bits(created.Sub(macEpoch).Seconds()))
		cookies = append(cookies, append(rec, strs.Bytes()...))
	}
	page := []byte{0, 0, 1, 0}
	page = binary.LittleEndian.AppendUint32(page, uint32(len(cookies)))
	off := len(page) + 4*len(cookies) + 4
	for _, c := range cookies {
		page = binary.LittleEndian.AppendUint32(page, uint32(off))
		off += len(c)
	}
	page = append(page, 0, 0, 0, 0)
	for _, c := range cookies {
		page = append(page, c...)
	}
	var sum uint32
	for i := 0; i < len(page); i += 4 {
		sum += uint32(page[i])
	}
	file := append([]byte("cook"), 0, 0, 0, 1)
	file = binary.BigEndian.AppendUint32(file, uint32(len(page)))
	file = append(file, page...)
	file = binary.BigEndian.AppendUint32(file, sum)
	file = append(file, 0x07, 0x17, 0x20, 0x05, 0, 0, 0, 0x4b)
	b.put(loc, 0o600, file, b.recent())
}

// macEnv turns the Linux environment into a Mac's: the persona's PATH and
// shell and its own variables replace or join canaryfs's.
func macEnv(env, persona []string) []string {
	out := slices.Clone(env)
	for _, kv := range persona {
		k, _, _ := strings.Cut(kv, "=")
		i := slices.IndexFunc(out, func(x string) bool { return strings.HasPrefix(x, k+"=") })
		if i >= 0 {
			out[i] = kv
		} else {
			out = append(out, kv)
		}
	}
	return out
}
