package canaryfs

import (
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
)

const chromeProfile = ".config/google-chrome/Default"

// Chrome's schemas, as current Chrome on Linux creates them.
var (
	chromeLoginSchema = []string{
		`CREATE TABLE meta(key LONGVARCHAR NOT NULL UNIQUE PRIMARY KEY, value LONGVARCHAR)`,
		`CREATE TABLE logins (origin_url VARCHAR NOT NULL, action_url VARCHAR, username_element VARCHAR, username_value VARCHAR, password_element VARCHAR, password_value BLOB, submit_element VARCHAR, signon_realm VARCHAR NOT NULL, date_created INTEGER NOT NULL, blacklisted_by_user INTEGER NOT NULL, scheme INTEGER NOT NULL, password_type INTEGER, times_used INTEGER, form_data BLOB, display_name VARCHAR, icon_url VARCHAR, federation_url VARCHAR, skip_zero_click INTEGER, generation_upload_status INTEGER, possible_username_pairs BLOB, id INTEGER PRIMARY KEY AUTOINCREMENT, date_last_used INTEGER NOT NULL DEFAULT 0, moving_blocked_for BLOB, date_password_modified INTEGER NOT NULL DEFAULT 0, sender_email VARCHAR, sender_name VARCHAR, date_received INTEGER, sharing_notification_displayed INTEGER NOT NULL DEFAULT 0, keychain_identifier BLOB, sender_profile_image_url VARCHAR, UNIQUE (origin_url, username_element, username_value, password_element, signon_realm))`,
		`CREATE INDEX logins_signon ON logins (signon_realm)`,
		`INSERT INTO meta VALUES ('mmap_status', '-1'), ('version', '41'), ('last_compatible_version', '40')`,
	}
	chromeCookieSchema = []string{
		`CREATE TABLE meta(key LONGVARCHAR NOT NULL UNIQUE PRIMARY KEY, value LONGVARCHAR)`,
		`CREATE TABLE cookies(creation_utc INTEGER NOT NULL,host_key TEXT NOT NULL,top_frame_site_key TEXT NOT NULL,name TEXT NOT NULL,value TEXT NOT NULL,encrypted_value BLOB NOT NULL,path TEXT NOT NULL,expires_utc INTEGER NOT NULL,is_secure INTEGER NOT NULL,is_httponly INTEGER NOT NULL,last_access_utc INTEGER NOT NULL,has_expires INTEGER NOT NULL,is_persistent INTEGER NOT NULL,priority INTEGER NOT NULL,samesite INTEGER NOT NULL,source_scheme INTEGER NOT NULL,source_port INTEGER NOT NULL,last_update_utc INTEGER NOT NULL,source_type INTEGER NOT NULL,has_cross_site_ancestor INTEGER NOT NULL)`,
		`CREATE UNIQUE INDEX cookies_unique_index ON cookies(host_key, top_frame_site_key, has_cross_site_ancestor, name, path, source_scheme, source_port)`,
		`INSERT INTO meta VALUES ('mmap_status', '-1'), ('version', '24'), ('last_compatible_version', '24')`,
	}
	firefoxCookieSchema = []string{
		`CREATE TABLE moz_cookies (id INTEGER PRIMARY KEY, originAttributes TEXT NOT NULL DEFAULT '', name TEXT, value TEXT, host TEXT, path TEXT, expiry INTEGER, lastAccessed INTEGER, creationTime INTEGER, isSecure INTEGER, isHttpOnly INTEGER, inBrowserElement INTEGER DEFAULT 0, sameSite INTEGER DEFAULT 0, rawSameSite INTEGER DEFAULT 0, schemeMap INTEGER DEFAULT 0, isPartitionedAttributeSet INTEGER DEFAULT 0, CONSTRAINT moz_uniqueid UNIQUE (name, host, path, originAttributes))`,
	}
	firefoxKeySchema = []string{
		`CREATE TABLE metaData (id PRIMARY KEY UNIQUE ON CONFLICT REPLACE, item1, item2)`,
		`CREATE TABLE nssPrivate (id PRIMARY KEY UNIQUE ON CONFLICT ABORT, a0, a1, a2, a3, a10, a11, a12, a80, a81, a82, a83, a90, a100, a101, a102, a103, a104, a105, a106, a107, a108, a109, a10a, a10b, a10c, a110, a111, a120, a121, a122, a123, a124, a125, a126, a127, a128, a129, a12a, a130, a131, a132, a133, a134, a160, a161, a162, a163, a164, a165, a166, a170, a180, a181, a200, a201, a202, a210, a300, a301, a302)`,
	}
)

func (b *builder) plantBrowsers() {
	// Chrome saved passwords, encrypted as Chrome on Linux does: the token
	// is the password, its encrypted form a raw needle.
	logins := []struct{ origin, action, user string }{
		{"https://github.com/login", "https://github.com/session", b.user},
		{"https://accounts.google.com/", "https://accounts.google.com/signin/v2/challenge/pwd", b.email},
		{"https://signin.aws.amazon.com/", "https://signin.aws.amazon.com/authenticate", b.user},
		{"https://" + b.company.org + ".okta.com/", "https://" + b.company.org + ".okta.com/login/login.htm", b.email},
		{"https://app.slack.com/", "https://app.slack.com/signin", b.email},
	}
	var rows []sqlRow
	loc := "~/" + chromeProfile + "/Login Data"
	for _, l := range logins {
		t := b.m.MintPassword(canary.BrowserPassword, loc)
		enc := b.chromeEncrypt([]byte(t.Value))
		t.RawNeedles = [][]byte{enc[3:]}
		b.register(t)
		created := b.ago(5*24*time.Hour, 400*24*time.Hour)
		realm := l.origin[:len(l.origin)-len(pathOf(l.origin))] + "/"
		rows = append(rows, sqlRow{`INSERT INTO logins (origin_url, action_url, username_element, username_value, password_element, password_value, submit_element, signon_realm, date_created, blacklisted_by_user, scheme, password_type, times_used, form_data, display_name, icon_url, federation_url, skip_zero_click, generation_upload_status, possible_username_pairs, date_last_used, date_password_modified) VALUES (?, ?, 'username', ?, 'password', ?, '', ?, ?, 0, 0, 0, ?, x'', '', '', '', 0, 0, x'00000000', ?, ?)`,
			[]any{l.origin, l.action, l.user, enc, realm, chromeTime(created), 1 + b.m.Intn(60), chromeTime(b.recent()), chromeTime(created)}})
	}
	b.put(chromeProfile+"/Login Data", 0o600, b.sqlite(chromeLoginSchema, rows...), b.recent())

	// Chrome cookies: Chrome ≥ 130 prefixes the plaintext with
	// SHA-256(host_key) before encrypting.
	cookies := []struct{ host, name string }{
		{".github.com", "user_session"}, {".google.com", "SID"}, {".slack.com", "d"},
		{"." + b.company.org + ".okta.com", "sid"}, {".atlassian.net", "tenant.session.token"},
	}
	rows = nil
	loc = "~/" + chromeProfile + "/Cookies"
	for _, c := range cookies {
		t := b.m.Mint(canary.BrowserCookie, loc)
		if c.name == "d" {
			t.Value = "xoxd-" + t.Value
		}
		h := sha256.Sum256([]byte(c.host))
		enc := b.chromeEncrypt(append(h[:], t.Value...))
		t.RawNeedles = [][]byte{enc[3+32+16:]} // blocks holding only the value
		b.register(t)
		cr := b.ago(2*24*time.Hour, 90*24*time.Hour)
		rows = append(rows, sqlRow{`INSERT INTO cookies VALUES (?, ?, '', ?, '', ?, '/', ?, 1, 1, ?, 1, 1, 1, 0, 2, 443, ?, 0, 0)`,
			[]any{chromeTime(cr), c.host, c.name, enc, chromeTime(cr.Add(400 * 24 * time.Hour)), chromeTime(b.recent()), chromeTime(cr)}})
	}
	b.put(chromeProfile+"/Cookies", 0o600, b.sqlite(chromeCookieSchema, rows...), b.recent())
	// History: a browsing history is what "is this a real profile" probes
	// look for.
	var hrows []sqlRow
	sites := []struct{ url, title string }{
		{"https://github.com/" + b.company.org, b.company.name + " · GitHub"},
		{"https://mail.google.com/mail/u/0/#inbox", "Inbox - " + b.email + " - Gmail"},
		{"https://console.aws.amazon.com/console/home?region=us-east-1", "Console Home"},
		{"https://stackoverflow.com/questions/tagged/kubernetes", "Newest 'kubernetes' Questions - Stack Overflow"},
		{"https://" + b.company.org + ".atlassian.net/jira/your-work", "Your work - Jira"},
		{"https://www.youtube.com/", "YouTube"},
		{"https://news.ycombinator.com/", "Hacker News"},
		{"https://chatgpt.com/", "ChatGPT"},
		{"https://app.slack.com/client", "Slack"},
		{"https://grafana." + b.company.domain + "/d/api-latency", "API latency - Grafana"},
	}
	for i, s := range sites {
		hrows = append(hrows, sqlRow{`INSERT INTO urls (id, url, title, visit_count, typed_count, last_visit_time, hidden) VALUES (?, ?, ?, ?, ?, ?, 0)`,
			[]any{i + 1, s.url, s.title, 1 + b.m.Intn(200), b.m.Intn(20), chromeTime(b.recent())}})
	}
	b.put(chromeProfile+"/History", 0o600, b.sqlite([]string{
		`CREATE TABLE meta(key LONGVARCHAR NOT NULL UNIQUE PRIMARY KEY, value LONGVARCHAR)`,
		`CREATE TABLE urls(id INTEGER PRIMARY KEY AUTOINCREMENT,url LONGVARCHAR,title LONGVARCHAR,visit_count INTEGER DEFAULT 0 NOT NULL,typed_count INTEGER DEFAULT 0 NOT NULL,last_visit_time INTEGER NOT NULL,hidden INTEGER DEFAULT 0 NOT NULL)`,
		`CREATE TABLE visits(id INTEGER PRIMARY KEY AUTOINCREMENT,url INTEGER NOT NULL,visit_time INTEGER NOT NULL,from_visit INTEGER,external_referrer_url TEXT,transition INTEGER DEFAULT 0 NOT NULL,segment_id INTEGER,visit_duration INTEGER DEFAULT 0 NOT NULL,incremented_omnibox_typed_score BOOLEAN DEFAULT FALSE NOT NULL,opener_visit INTEGER,originator_cache_guid TEXT,originator_visit_id INTEGER,originator_from_visit INTEGER,originator_opener_visit INTEGER,is_known_to_sync BOOLEAN DEFAULT FALSE NOT NULL,consider_for_ntp_most_visited BOOLEAN DEFAULT FALSE NOT NULL,visited_link_id INTEGER DEFAULT 0 NOT NULL,app_id TEXT)`,
		`CREATE INDEX urls_url_index ON urls (url)`,
		`INSERT INTO meta VALUES ('mmap_status', '-1'), ('version', '68'), ('last_compatible_version', '16')`,
	}, hrows...), b.recent())
	b.putJSON(".config/google-chrome/Local State", 0o600, map[string]any{
		"browser": map[string]any{"enabled_labs_experiments": []string{}},
		"profile": map[string]any{"last_used": "Default", "info_cache": map[string]any{"Default": map[string]any{
			"name": "Person 1", "user_name": b.email, "gaia_name": b.fullName, "is_using_default_name": true}}},
	})
	b.putJSON(chromeProfile+"/Preferences", 0o600, map[string]any{
		"account_info": []any{map[string]any{"email": b.email, "full_name": b.fullName, "gaia": "1" + b.m.Chars(canary.Digits, 20)}},
		"profile":      map[string]any{"name": "Person 1", "exit_type": "Normal", "created_by_version": "131.0.6778.85"},
		"extensions":   map[string]any{"settings": map[string]any{"nkbihfbeogaeaoehlefnkodbefgpgknn": map[string]any{"state": 1, "manifest": map[string]any{"name": "MetaMask", "version": "12.6.2"}}}},
	})
	b.putJSON(chromeProfile+"/Bookmarks", 0o600, map[string]any{"roots": map[string]any{"bookmark_bar": map[string]any{"children": []any{
		map[string]any{"name": "Jira", "type": "url", "url": "https://" + b.company.org + ".atlassian.net/jira"},
		map[string]any{"name": "AWS console", "type": "url", "url": "https://console.aws.amazon.com/"},
		map[string]any{"name": "Grafana", "type": "url", "url": "https://grafana." + b.company.domain + "/"},
	}, "name": "Bookmarks bar", "type": "folder"}}, "version": 1})

	// Firefox.
	prof := b.m.Chars(canary.Lower+canary.Digits, 8) + ".default-release"
	ff := ".mozilla/firefox/" + prof
	b.putS(".mozilla/firefox/profiles.ini", 0o644, fmt.Sprintf("[Profile0]\nName=default-release\nIsRelative=1\nPath=%s\nDefault=1\n\n[General]\nStartWithLastProfile=1\nVersion=2\n", prof))
	b.putS(".mozilla/firefox/installs.ini", 0o644, fmt.Sprintf("[4F96D1932A9F858E]\nDefault=%s\nLocked=1\n", prof))
	type ffLogin struct {
		ID                  int    `json:"id"`
		Hostname            string `json:"hostname"`
		HTTPRealm           any    `json:"httpRealm"`
		FormSubmitURL       string `json:"formSubmitURL"`
		UsernameField       string `json:"usernameField"`
		PasswordField       string `json:"passwordField"`
		EncryptedUsername   string `json:"encryptedUsername"`
		EncryptedPassword   string `json:"encryptedPassword"`
		GUID                string `json:"guid"`
		EncType             int    `json:"encType"`
		TimeCreated         int64  `json:"timeCreated"`
		TimeLastUsed        int64  `json:"timeLastUsed"`
		TimePasswordChanged int64  `json:"timePasswordChanged"`
		TimesUsed           int    `json:"timesUsed"`
	}
	var fl []ffLogin
	loc = "~/" + ff + "/logins.json"
	for i, host := range []string{"https://gitlab.com", "https://www.linkedin.com", "https://id.atlassian.com"} {
		var pw string
		b.secretly(func() { pw = b.nssBlob(16 + 8*b.m.Intn(2)) })
		b.register(b.m.Token(canary.BrowserPassword, loc, pw))
		t := b.ago(10*24*time.Hour, 300*24*time.Hour).UnixMilli()
		fl = append(fl, ffLogin{ID: i + 1, Hostname: host, FormSubmitURL: host, UsernameField: "username", PasswordField: "password",
			EncryptedUsername: b.nssBlob(24), EncryptedPassword: pw, GUID: "{" + b.m.UUID() + "}", EncType: 1,
			TimeCreated: t, TimeLastUsed: t + int64(b.m.Intn(1e9)), TimePasswordChanged: t, TimesUsed: 1 + b.m.Intn(30)})
	}
	b.putJSON(ff+"/logins.json", 0o600, map[string]any{"nextId": len(fl) + 1, "logins": fl, "potentiallyVulnerablePasswords": []any{},
		"dismissedBreachAlertsByLoginGUID": map[string]any{}, "version": 3})
	b.put(ff+"/key4.db", 0o600, b.sqlite(firefoxKeySchema,
		sqlRow{`INSERT INTO metaData VALUES ('password', ?, ?)`, []any{b.m.Bytes(20), b.m.Bytes(122)}},
		sqlRow{`INSERT INTO metaData VALUES ('Version', 1, NULL)`, nil},
		sqlRow{`INSERT INTO nssPrivate (id, a0, a1, a2, a3, a10, a11, a102) VALUES (?, 4, ?, ?, 0, 1, ?, x'f8000000000000000000000000000001')`,
			[]any{b.m.Intn(1 << 30), b.m.Bytes(16), b.m.Bytes(16), b.m.Bytes(148)}}), b.recent())
	var crows []sqlRow
	loc = "~/" + ff + "/cookies.sqlite"
	for i, c := range []struct{ host, name string }{{".reddit.com", "reddit_session"}, {".stackoverflow.com", "acct"}, {".gitlab.com", "_gitlab_session"}} {
		v := b.mint(canary.BrowserCookie, loc[2:])
		cr := b.ago(2*24*time.Hour, 60*24*time.Hour)
		crows = append(crows, sqlRow{`INSERT INTO moz_cookies (id, originAttributes, name, value, host, path, expiry, lastAccessed, creationTime, isSecure, isHttpOnly, sameSite, rawSameSite, schemeMap) VALUES (?, '', ?, ?, ?, '/', ?, ?, ?, 1, 1, 0, 0, 2)`,
			[]any{i + 1, c.name, v, c.host, cr.Add(365 * 24 * time.Hour).Unix(), b.recent().UnixMicro(), cr.UnixMicro()}})
	}
	b.put(ff+"/cookies.sqlite", 0o644, b.sqlite(firefoxCookieSchema, crows...), b.recent())
	b.putS(ff+"/prefs.js", 0o600, "// Mozilla User Preferences\n\nuser_pref(\"browser.startup.page\", 3);\nuser_pref(\"signon.rememberSignons\", true);\n")
	b.putS(ff+"/times.json", 0o600, fmt.Sprintf("{\"created\":%d,\"firstUse\":null}", b.ago(300*24*time.Hour, 700*24*time.Hour).UnixMilli()))
}

func pathOf(u string) string {
	n := 0
	for i := range len(u) {
		if u[i] == '/' {
			n++
			if n == 3 {
				return u[i:]
			}
		}
	}
	return ""
}

// nssBlob returns a Firefox-style encrypted field: base64 of the DER
// SEQUENCE {key id, {des-ede3-cbc, iv}, ciphertext} NSS writes.
func (b *builder) nssBlob(n int) string {
	type algo struct {
		OID asn1.ObjectIdentifier
		IV  []byte
	}
	der, err := asn1.Marshal(struct {
		KeyID []byte
		Algo  algo
		CT    []byte
	}{[]byte("\xf8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"),
		algo{asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}, b.m.Bytes(8)}, b.m.Bytes(n)})
	b.fail(err)
	return base64.StdEncoding.EncodeToString(der)
}
