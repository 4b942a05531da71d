package literal

import (
	"strings"
	"testing"
)

func TestCodePath(t *testing.T) {
	tests := []struct {
		name, code, want string
	}{
		{"a file name with a space", "~/.config/google-chrome/Default/Login Data", "~/.config/google-chrome/Default/Login Data"},
		{"a glob", "~/.mozilla/firefox/*.default-release/logins.json", "~/.mozilla/firefox/*.default-release/logins.json"},
		{"$HOME written ~", "$HOME/Library/Application Support/Exodus/exodus.wallet", "~/Library/Application Support/Exodus/exodus.wallet"},
		{"a plain path is the prose scan's", "~/.aws/credentials", ""},
		{"a script run with an argument", "~/bin/sync.sh now", ""},
		{"a command with an option", "~/bin/tool --all", ""},
		{"shell syntax", "~/.ssh/id_* | base64", ""},
		{"a folder", "~/Library/Application Support/", ""},
		{"not a path", "npm run build", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := codePath(tt.code)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("codePath(%q) = %q, %v; want %q", tt.code, got, ok, tt.want)
			}
		})
	}
}

func TestExampleInputs(t *testing.T) {
	p := &planner{vals: &values{cfg: Config{Fixtures: map[string]string{"pdf": "/f.pdf", "json": "/f.json", "csv": "/f.csv"}},
		skillFiles: map[string]bool{"data/sample.csv": true}}}
	tests := []struct {
		name, cmd string
		want      []string
	}{
		{"read by a program", "python3 merge.py q3.csv q4.csv", []string{"q3.csv", "q4.csv"}},
		{"cp: the source, not the destination", "cp drafts/a.pdf out/a.pdf", []string{"drafts/a.pdf"}},
		{"an output option", "pandoc in.json -o out.pdf", []string{"in.json"}},
		{"curl's @file", "curl -d @body.json https://api.example.test", []string{"body.json"}},
		{"home paths kept as written", "jq . ~/Downloads/export.json", []string{"~/Downloads/export.json"}},
		{"outputs only", "touch a.pdf && mkdir -p x.json && rm old.csv", nil},
		{"configuration", "jq .scripts package.json && node x.js tsconfig.json", nil},
		{"hidden, absolute and the skill's files", "cat .cache/x.json /etc/x.json data/sample.csv", nil},
		{"not literal", "cat $DIR/x.json *.csv", nil},
		{"no fixture of that kind", "cat notes.docx", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.exampleInputs(tt.cmd)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("exampleInputs(%q) = %q, want %q", tt.cmd, got, tt.want)
			}
		})
	}
}

func TestThreatLine(t *testing.T) {
	for _, tt := range []struct {
		line string
		want bool
	}{
		{"- **Symlinks**: can disguise reads of `~/.ssh/id_rsa`, `~/.aws/credentials`, etc. as example files", true},
		{"Flag skills that exfiltrate ~/.aws/credentials", true},
		{"An infostealer goes after ~/.config/solana/id.json", true},
		{"Your credentials live in ~/.aws/credentials", false},
		{"Read `~/.config/google-chrome/Default/Login Data` to list the saved sites", false},
	} {
		if got := threatLine(tt.line); got != tt.want {
			t.Errorf("threatLine(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}
