package canaryfs

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"
)

// Git repositories written object by object (loose zlib objects, trees,
// commits, refs, an index), so that git log, git status and git diff work in
// the container without a git binary at build time.

type gitFile struct {
	path    string // relative to the repository
	mode    fs.FileMode
	content []byte
}

type gitCommit struct {
	msg   string
	files []gitFile // the files this commit adds or changes
}

type gitRepo struct {
	objects map[string][]byte // id → zlib-compressed object
}

func (r *gitRepo) store(typ string, body []byte) string {
	raw := append([]byte(fmt.Sprintf("%s %d\x00", typ, len(body))), body...)
	sum := sha1.Sum(raw)
	id := hex.EncodeToString(sum[:])
	if _, ok := r.objects[id]; !ok {
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write(raw)
		w.Close()
		r.objects[id] = z.Bytes()
	}
	return id
}

// tree stores the tree of files (paths relative to prefix) and returns its id.
func (r *gitRepo) tree(files map[string]gitFile, prefix string) string {
	type entry struct {
		name, mode, id string
		dir            bool
	}
	var ents []entry
	subdirs := map[string]bool{}
	for p, f := range files {
		rel, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		if d, _, isDir := strings.Cut(rel, "/"); isDir {
			subdirs[d] = true
			continue
		}
		mode := "100644"
		if f.mode&0o100 != 0 {
			mode = "100755"
		}
		ents = append(ents, entry{rel, mode, r.store("blob", f.content), false})
	}
	for d := range subdirs {
		ents = append(ents, entry{d, "40000", r.tree(files, prefix+d+"/"), true})
	}
	// Git sorts directories as if their name ended in "/".
	key := func(e entry) string {
		if e.dir {
			return e.name + "/"
		}
		return e.name
	}
	slices.SortFunc(ents, func(a, b entry) int { return strings.Compare(key(a), key(b)) })
	var body []byte
	for _, e := range ents {
		body = append(body, e.mode+" "+e.name+"\x00"...)
		id, _ := hex.DecodeString(e.id)
		body = append(body, id...)
	}
	return r.store("tree", body)
}

// writeRepo writes a repository at dir (home-relative) with the given
// history, its working tree (the last state plus untracked files), and an
// origin remote.
func (b *builder) writeRepo(dir, remote string, history []gitCommit, untracked []gitFile, start time.Time) {
	r := &gitRepo{objects: map[string][]byte{}}
	state := map[string]gitFile{}
	parent := ""
	t := start
	author := fmt.Sprintf("%s <%s>", b.fullName, b.email)
	var last time.Time
	for _, c := range history {
		for _, f := range c.files {
			state[f.path] = f
		}
		tree := r.tree(state, "")
		var body strings.Builder
		fmt.Fprintf(&body, "tree %s\n", tree)
		if parent != "" {
			fmt.Fprintf(&body, "parent %s\n", parent)
		}
		fmt.Fprintf(&body, "author %s %d +0000\ncommitter %s %d +0000\n\n%s\n", author, t.Unix(), author, t.Unix(), c.msg)
		parent = r.store("commit", []byte(body.String()))
		last = t
		t = t.Add(time.Duration(2+b.m.Intn(70)) * time.Hour)
		if t.After(b.now.Add(-time.Hour)) {
			t = b.now.Add(-time.Hour)
		}
	}
	g := dir + "/.git/"
	for id, z := range r.objects {
		b.put(g+"objects/"+id[:2]+"/"+id[2:], 0o444, z, last)
	}
	b.put(g+"HEAD", 0o644, []byte("ref: refs/heads/main\n"), last)
	b.put(g+"refs/heads/main", 0o644, []byte(parent+"\n"), last)
	b.put(g+"refs/remotes/origin/main", 0o644, []byte(parent+"\n"), last)
	b.put(g+"refs/remotes/origin/HEAD", 0o644, []byte("ref: refs/remotes/origin/main\n"), last)
	b.put(g+"config", 0o644, []byte(fmt.Sprintf("[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = %s\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n", remote)), last)
	b.put(g+"description", 0o644, []byte("Unnamed repository; edit this file 'description' to name the repository.\n"), last)
	b.put(g+"info/exclude", 0o644, []byte("# git ls-files --others --exclude-from=.git/info/exclude\n"), last)
	b.dir(g+"hooks", 0o755)
	b.dir(g+"refs/tags", 0o755)
	b.put(g+"logs/HEAD", 0o644, []byte(fmt.Sprintf("%s %s %s %d +0000\tclone: from %s\n", strings.Repeat("0", 40), parent, author, start.Unix(), remote)), last)
	// Working tree and index.
	paths := make([]string, 0, len(state))
	for p := range state {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var idx []byte
	idx = append(idx, "DIRC"...)
	idx = binary.BigEndian.AppendUint32(idx, 2)
	idx = binary.BigEndian.AppendUint32(idx, uint32(len(paths)))
	for _, p := range paths {
		f := state[p]
		mt := b.ago(time.Hour, 5*24*time.Hour)
		if mt.Before(last) {
			mt = last
		}
		b.put(dir+"/"+p, f.mode, f.content, mt)
		raw := append([]byte(fmt.Sprintf("blob %d\x00", len(f.content))), f.content...)
		sum := sha1.Sum(raw)
		start := len(idx)
		for range 2 { // ctime, mtime
			idx = binary.BigEndian.AppendUint32(idx, uint32(mt.Unix()))
			idx = binary.BigEndian.AppendUint32(idx, 0)
		}
		idx = append(idx, make([]byte, 8)...) // dev, ino: git refreshes them
		mode := uint32(0o100644)
		if f.mode&0o100 != 0 {
			mode = 0o100755
		}
		idx = binary.BigEndian.AppendUint32(idx, mode)
		idx = binary.BigEndian.AppendUint32(idx, 1000)
		idx = binary.BigEndian.AppendUint32(idx, 1000)
		idx = binary.BigEndian.AppendUint32(idx, uint32(len(f.content)))
		idx = append(idx, sum[:]...)
		idx = binary.BigEndian.AppendUint16(idx, uint16(min(len(p), 0xfff)))
		idx = append(idx, p...)
		for n := len(idx) - start; ; n++ { // NUL-padded to a multiple of 8
			idx = append(idx, 0)
			if (n+1)%8 == 0 {
				break
			}
		}
	}
	sum := sha1.Sum(idx)
	b.put(g+"index", 0o644, append(idx, sum[:]...), last)
	for _, f := range untracked {
		b.put(dir+"/"+f.path, f.mode, f.content, b.recent())
	}
}
