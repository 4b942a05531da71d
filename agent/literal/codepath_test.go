package literal

import "testing"

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
