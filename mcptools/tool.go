package mcptools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/toolspec"
)

// Caps of the file tools, inside the sandbox.
const (
	maxToolInput    = 32 << 20 // JSON arguments on stdin
	maxSearchVisit  = 50_000   // entries walked by search_files
	maxSearchHits   = 1_000
	maxSearchFile   = 1 << 20 // bytes of one file searched
	maxFetchBody    = 16 << 20
	maxLineExcerpts = 240
)

// Tool is `agentd __tool [--uid N --gid N --user NAME] NAME`: it runs one
// file or network tool as the unprivileged user, reading the tool's JSON
// arguments on stdin, writing what the model sees on stdout and failures on
// stderr. Started as root (the shim runs agentd as root: the binary is not
// the user's to run), it becomes the user given before anything else, and
// refuses to go on if that fails. It returns the exit code: 0 done, 1 the
// operation failed, 2 bad arguments.
func Tool(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	id, args, err := parseIdentity(args)
	if err != nil {
		fmt.Fprintf(stderr, "agentd __tool: %v\n", err)
		return 2
	}
	if id.drops() {
		if err := id.become(); err != nil {
			fmt.Fprintf(stderr, "agentd __tool: become uid %d: %v\n", id.uid, err)
			return 2
		}
	}
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: agentd __tool NAME < ARGS.json")
		return 2
	}
	name := args[0]
	raw, err := io.ReadAll(io.LimitReader(stdin, maxToolInput+1))
	if err != nil || len(raw) > maxToolInput {
		fmt.Fprintf(stderr, "%s: arguments unreadable or over %d bytes\n", name, maxToolInput)
		return 2
	}
	var a toolArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		fmt.Fprintf(stderr, "%s: arguments: %v\n", name, err)
		return 2
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	switch name {
	case toolspec.ReadFile:
		err = readFile(w, a.Path)
	case toolspec.WriteFile:
		err = writeFile(w, a.Path, a.Content)
	case toolspec.EditFile:
		err = editFile(w, a.Path, a.Old, a.New)
	case toolspec.ListDirectory:
		err = listDirectory(w, a.Path)
	case toolspec.SearchFiles:
		err = searchFiles(w, a.Pattern, a.Path)
	case toolspec.FetchURL:
		err = fetchURL(ctx, w, a)
	default:
		fmt.Fprintf(stderr, "unknown tool %q\n", name)
		return 2
	}
	if err != nil {
		w.Flush()
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// toolArgs is the union of every tool's arguments.
type toolArgs struct {
	Command  string            `json:"command,omitempty"`
	TimeoutS *float64          `json:"timeout_s,omitempty"`
	Path     string            `json:"path,omitempty"`
	Content  *string           `json:"content,omitempty"`
	Old      *string           `json:"old,omitempty"`
	New      *string           `json:"new,omitempty"`
	Pattern  string            `json:"pattern,omitempty"`
	URL      string            `json:"url,omitempty"`
	Method   string            `json:"method,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	Body     *string           `json:"body,omitempty"`
}

func readFile(w io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory", p)
	}
	_, err = io.Copy(w, f)
	return err
}

func writeFile(w io.Writer, p string, content *string) error {
	if content == nil {
		return errors.New("content is required")
	}
	if dir := filepath.Dir(p); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(p, []byte(*content), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %d bytes to %s\n", len(*content), p)
	return nil
}

func editFile(w io.Writer, p string, old, new *string) error {
	if old == nil || new == nil {
		return errors.New("old and new are required")
	}
	if *old == "" {
		return errors.New("old must not be empty")
	}
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	switch n := bytes.Count(b, []byte(*old)); n {
	case 0:
		return fmt.Errorf("old text not found in %s", p)
	case 1:
	default:
		return fmt.Errorf("old text appears %d times in %s; give more context", n, p)
	}
	b = bytes.Replace(b, []byte(*old), []byte(*new), 1)
	if err := os.WriteFile(p, b, fi.Mode().Perm()); err != nil {
		return err
	}
	fmt.Fprintf(w, "edited %s\n", p)
	return nil
}

func listDirectory(w io.Writer, p string) error {
	if p == "" {
		p = "."
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	for _, e := range ents {
		switch {
		case e.IsDir():
			fmt.Fprintf(w, "%s/\n", e.Name())
		case e.Type()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(filepath.Join(p, e.Name()))
			fmt.Fprintf(w, "%s -> %s\n", e.Name(), t)
		default:
			size := int64(0)
			if fi, err := e.Info(); err == nil {
				size = fi.Size()
			}
			fmt.Fprintf(w, "%s\t%d\n", e.Name(), size)
		}
	}
	return nil
}

// searchFiles lists files under root whose name matches pattern (a glob
// when it has glob characters, else a case-insensitive substring or regular
// expression) and the lines of text files that match it as a regular
// expression (or literally, when it does not compile).
func searchFiles(w io.Writer, pattern, root string) error {
	if pattern == "" {
		return errors.New("pattern is required")
	}
	if root == "" {
		root = "."
	}
	glob := strings.ContainsAny(pattern, "*?[")
	if glob {
		if _, err := filepath.Match(pattern, ""); err != nil {
			glob = false
		}
	}
	// A pattern that is not a regular expression ("*.py") matches names
	// only, as a glob; one that is matches names and lines.
	re, err := regexp.Compile(pattern)
	grep := err == nil || !glob
	if err != nil {
		re = regexp.MustCompile(regexp.QuoteMeta(pattern))
	}
	lower := strings.ToLower(pattern)
	hits, visited, denied := 0, 0, 0
	errStop := errors.New("stop")
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			denied++
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		visited++
		if visited > maxSearchVisit || hits >= maxSearchHits {
			return errStop
		}
		name := d.Name()
		nameHit := strings.Contains(strings.ToLower(name), lower) || re.MatchString(name)
		if glob && !nameHit {
			nameHit, _ = filepath.Match(pattern, name)
		}
		if nameHit {
			hits++
			fmt.Fprintln(w, p)
		}
		if !grep || !d.Type().IsRegular() {
			return nil
		}
		return grepFile(w, p, re, &hits)
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if hits >= maxSearchHits || visited > maxSearchVisit {
		fmt.Fprintf(w, "[search stopped after %d results, %d entries]\n", hits, visited)
	}
	if denied > 0 {
		fmt.Fprintf(w, "[%d entries could not be read]\n", denied)
	}
	if hits == 0 {
		fmt.Fprintln(w, "no matches")
	}
	return nil
}

func grepFile(w io.Writer, p string, re *regexp.Regexp, hits *int) error {
	f, err := os.Open(p)
	if err != nil {
		return nil // unreadable files are skipped
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSearchFile))
	if err != nil || bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
		return nil // binary
	}
	for i, line := range strings.Split(string(b), "\n") {
		if *hits >= maxSearchHits {
			return nil
		}
		if re.MatchString(line) {
			*hits++
			if len(line) > maxLineExcerpts {
				line = line[:maxLineExcerpts] + "..."
			}
			fmt.Fprintf(w, "%s:%d: %s\n", p, i+1, line)
		}
	}
	return nil
}

func fetchURL(ctx context.Context, w io.Writer, a toolArgs) error {
	u, err := url.Parse(a.URL)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("url must be http or https with a host: %q", a.URL)
	}
	method := strings.ToUpper(a.Method)
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if a.Body != nil {
		body = strings.NewReader(*a.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return err
	}
	for k, v := range a.Headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "curl/7.88.1")
	}
	// No proxy from the environment: the sandbox's network is a jail that
	// catches every connection as it is.
	client := &http.Client{
		Transport: &http.Transport{Proxy: nil, TLSHandshakeTimeout: 30 * time.Second},
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	fmt.Fprintf(w, "%s %s\n", resp.Proto, resp.Status)
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range resp.Header[k] {
			fmt.Fprintf(w, "%s: %s\n", k, v)
		}
	}
	fmt.Fprintln(w)
	_, err = io.Copy(w, io.LimitReader(resp.Body, maxFetchBody))
	return err
}
