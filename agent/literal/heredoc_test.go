package literal

import "testing"

func TestHeredocRE(t *testing.T) {
	for in, want := range map[string]string{
		"cat > f <<EOF":         "EOF",
		"cat <<-'END'":          "END",
		`python3 - <<"PY"`:      "PY",
		`grep x <<< "$HOME"`:    "",
		"echo $((1<<2))":        "",
		"cat <<EOF > ~/.bashrc": "EOF",
	} {
		got := ""
		if m := heredocRE.FindStringSubmatch(in); m != nil {
			got = m[2]
		}
		if got != want {
			t.Errorf("heredoc terminator of %q = %q, want %q", in, got, want)
		}
	}
}
