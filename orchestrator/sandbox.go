package orchestrator

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/internal/capbuf"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// startContainers is the jail and sandbox stages of a pass, overlapped
// where the engine allows: the home and skill are packed while the
// containers are made, the sandbox is created while the jail starts (it
// needs only the jail's id), and set up while the jail's sinks come up (the
// setup sends nothing on the network). The skill gets control only once
// both are done.
func (r *Runner) startContainers(ctx context.Context, st *run) error {
	payload := packSetup(st)
	if err := r.createJail(ctx, st); err != nil {
		return fmt.Errorf("start jail: %w", causeOf(ctx, err))
	}
	var jerr error
	var wg sync.WaitGroup
	wg.Go(func() { jerr = r.startJail(ctx, st) })
	serr := r.createSandbox(ctx, st)
	wg.Wait()
	if jerr != nil {
		return fmt.Errorf("start jail: %w", causeOf(ctx, jerr))
	}
	if serr != nil {
		return fmt.Errorf("start sandbox: %w", causeOf(ctx, serr))
	}
	r.lap(st, "jail")
	if err := r.setupSandbox(ctx, st, payload); err != nil {
		if jerr := r.jailExited(st); jerr != nil {
			err = jerr // the sandbox could not start because the jail ended
		}
		return fmt.Errorf("start sandbox: %w", causeOf(ctx, err))
	}
	r.lap(st, "sandbox")
	if err := r.jailReady(ctx, st); err != nil {
		return fmt.Errorf("start jail: %w", causeOf(ctx, err))
	}
	r.lap(st, "jail ready")
	return nil
}

// jailExited returns ErrJailNotReady when the jail's main process ended.
func (r *Runner) jailExited(st *run) error {
	select {
	case <-st.jailEv.done:
		return fmt.Errorf("%w: it exited: %s", ErrJailNotReady, st.jailEv.stderrTail())
	default:
		return nil
	}
}

// packSetup packs the seeded home, the skill and the system files for the
// setup exec, in the background; the returned func waits for them.
func packSetup(st *run) func() (*bytes.Buffer, error) {
	var payload bytes.Buffer
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err = st.homeWait(); err != nil {
			return
		}
		if err = writeSetupTar(&payload, st.home, st.plan.Restore, st.skill, st.skillDir); err != nil {
			err = fmt.Errorf("pack home and skill: %w", err)
			return
		}
		err = writeSystemTar(&payload, st.system)
	}()
	return func() (*bytes.Buffer, error) {
		<-done
		return &payload, err
	}
}

// createSandbox creates the sandbox in the jail's namespace (not started).
func (r *Runner) createSandbox(ctx context.Context, st *run) error {
	r.phase("sandbox", "sandbox for %s@%s", st.ident.User, st.ident.Hostname)
	// The account files are dated to the home's Since by the setup exec:
	// the home may still be in the making.
	files := append([]File{
		{Path: CAPath, Mode: 0o644, Content: st.jailCfg.CACert},
	}, passwdFiles(st.ident.User, st.ident.HomeDir, st.ident.Shell, st.started)...)
	prof, err := sandboxSeccomp()
	if err != nil {
		return err
	}
	sb, err := r.Runtime.Create(ctx, sandboxSpec(st.plan, st.image, st.jail.ID(), st.ident.HomeDir, files, prof))
	if err != nil {
		return err
	}
	st.sandbox = sb
	return nil
}

// setupSandbox starts the sandbox, then, as root inside it: removes
// /.dockerenv, unpacks the seeded home and the skill (payload), and
// installs the trace CA in every trust store.
func (r *Runner) setupSandbox(ctx context.Context, st *run, payload func() (*bytes.Buffer, error)) error {
	if err := st.sandbox.Start(ctx); err != nil {
		return err
	}
	tarball, err := payload()
	if err != nil {
		return err
	}
	stdout, stderr := capbuf.New(8<<20), capbuf.New(64<<10)
	t0 := time.Now()
	defer func() { r.log().Debug("sandbox: setup exec", "took", time.Since(t0)) }()
	code, err := st.sandbox.Exec(ctx, ExecSpec{
		Argv: []string{"/bin/sh", "-c", setupScript},
		User: "0:0",
		Env: []string{"CA=" + CAPath, "INSTALL_CA=" + InstallCA, "HOME_DIR=" + st.home.HomeDir,
			"SINCE=" + strconv.FormatInt(st.home.Since.Unix(), 10), "MONITORING=" + st.plan.Monitoring,
			"CLOCK_LIB=" + clockLib},
		Stdin:  tarball,
		Stdout: stdout,
		Stderr: stderr,
	})
	if err != nil {
		return fmt.Errorf("set up sandbox: %w", err)
	}
	if code != 0 {
		return fmt.Errorf("set up sandbox: exit %d: %s", code, tail(stderr.String(), 400))
	}
	st.planted = plantedEvents(st.home, parseIdentities(stdout.String()), r.now())
	return nil
}

// setupScript runs as root in the sandbox before the skill: hide the
// engine's marker file (unless monitoring is to be visible: then it stays,
// and security agents start) and the tool server's folder (agentd and strace are
// root's alone), unpack the home, the skill and the system files (tar keeps
// owners and modes), put the hosts file in place (in place: the engine
// bind-mounts it), install the trace CA, give the engine's files plausible
// dates, give the home lived-in access times and print the identity of
// every file of the home (agentd __settle: one process, where a Python
// interpreter and a find used to start), stamp the moment the skill gets
// control, and last (so setup keeps the real time) preload the fake clock
// when there is one.
var setupScript = `set -e
[ "$MONITORING" = visible ] || rm -f /.dockerenv
chmod 0700 /usr/local/lib/agent
tar -x -i -p -f - -C /
if [ -f ` + hostsStage + ` ]; then cat ` + hostsStage + ` >/etc/hosts; rm -f ` + hostsStage + `; fi
"$INSTALL_CA" "$CA" >/dev/null
touch -d "@$SINCE" /etc/hostname /etc/hosts /etc/passwd /etc/group /etc/shadow 2>/dev/null || true
up=$(cut -d. -f1 /proc/uptime)
touch -d "@$(( $(date +%s) - up ))" /etc/resolv.conf 2>/dev/null || true
` + AgentBin + ` __settle --home "$HOME_DIR"
if [ "$MONITORING" = visible ]; then
	for a in ` + strings.Join(securityAgents, " ") + `; do
		mkdir -p "${a%/*}" && cp /bin/sleep "$a" && setsid "$a" infinity </dev/null >/dev/null 2>&1 &
	done
fi
mkdir -p -m 0700 /run/agentd && touch /run/agentd/stamp
if [ -f ` + faketimeRC + ` ]; then
	for l in $CLOCK_LIB; do [ -f "$l" ] && echo "$l" >` + preloadPath + `; done
	[ -s ` + preloadPath + ` ] || { echo "fake clock: no libfaketime in the image" >&2; exit 1; }
fi
`

// securityAgents are the processes a watched machine runs (an EDR sensor,
// a host query agent, the audit daemon), started as root under
// Plan.Monitoring "visible": a skill that looks for them in ps finds them.
var securityAgents = []string{"/opt/CrowdStrike/falcond", "/opt/osquery/bin/osqueryd", "/sbin/auditd"}

// writeSetupTar writes the seeded home, the files to restore (the user's)
// and the skill, read-only and owned by root, as concatenated tar archives
// for `tar -x -i` at "/".
func writeSetupTar(w io.Writer, home *canaryfs.Home, restore []traceplan.RestoreFile, sk *skill.Skill, skillDir string) error {
	if err := home.WriteTar(w, UserUID, UserGID); err != nil {
		return err
	}
	if err := writeRestoreTar(w, home, restore); err != nil {
		return fmt.Errorf("pack restored files: %w", err)
	}
	if sk == nil {
		return nil // a Pool's pair: the skill comes at claim (installSkill)
	}
	return writeSkillTar(w, home, sk, skillDir)
}

// writeSkillTar writes the skill, read-only and owned by root, in its
// folder of the home, as a tar archive for `tar -x` at "/".
func writeSkillTar(w io.Writer, home *canaryfs.Home, sk *skill.Skill, skillDir string) error {
	tw := tar.NewWriter(w)
	mtime := time.Now().Add(-36 * time.Hour)
	// The skill's parents belong to the user, as an agent would have made them.
	parent := path.Dir(skillDir)
	for _, d := range []string{path.Dir(parent), parent} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/",
			Mode: 0o755, Uid: UserUID, Gid: UserGID, Uname: home.User, Gname: home.User, ModTime: mtime}); err != nil {
			return err
		}
	}
	dirs := map[string]bool{}
	var addDir func(d string) error
	addDir = func(d string) error {
		if dirs[d] || d == skillDir || !strings.HasPrefix(d, skillDir) {
			return nil
		}
		if err := addDir(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/",
			Mode: 0o555, Uname: "root", Gname: "root", ModTime: mtime})
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(skillDir, "/") + "/",
		Mode: 0o555, Uname: "root", Gname: "root", ModTime: mtime}); err != nil {
		return err
	}
	for _, f := range sk.Files {
		p := path.Join(skillDir, f.Path)
		if err := addDir(path.Dir(p)); err != nil {
			return err
		}
		mode := int64(0o444)
		if f.Mode&0o111 != 0 || bytes.HasPrefix(f.Content, []byte("#!")) {
			mode = 0o555
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(p, "/"), Mode: mode,
			Size: int64(len(f.Content)), Uname: "root", Gname: "root", ModTime: mtime}); err != nil {
			return err
		}
		if _, err := tw.Write(f.Content); err != nil {
			return err
		}
	}
	return tw.Close()
}

var slugRe = regexp.MustCompile(`[^a-z0-9._-]+`)

// skillSlug is the skill's folder name in the sandbox.
func skillSlug(s *skill.Skill) string {
	n := strings.Trim(slugRe.ReplaceAllString(strings.ToLower(s.Name), "-"), "-.")
	if n == "" {
		n = "skill"
	}
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// restoreRoots are where a restored file may go besides the home: the
// places whose changes a trace collects (changedScript).
var restoreRoots = []string{"/tmp", "/var/tmp", "/dev/shm"}

// writeRestoreTar writes the files to restore, owned by the user, with
// the folders they need that the home does not have (owned by the user
// too), as a tar archive for `tar -x` at "/". A path outside the home and
// the temp folders, or through a planted symbolic link, is an error.
func writeRestoreTar(w io.Writer, home *canaryfs.Home, files []traceplan.RestoreFile) error {
	if len(files) == 0 {
		return nil
	}
	tw := tar.NewWriter(w)
	made := map[string]bool{}
	mtime := time.Now()
	for _, f := range files {
		p := path.Clean(f.Path)
		root := ""
		for _, r := range append([]string{home.HomeDir}, restoreRoots...) {
			if strings.HasPrefix(p, r+"/") {
				root = r
				break
			}
		}
		if root == "" || p != f.Path {
			return fmt.Errorf("restore %q: not a clean path under the home or a temp folder", f.Path)
		}
		var parents []string
		for d := path.Dir(p); d != root; d = path.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			d := parents[i]
			if pf, ok := home.File(d); ok {
				if !pf.Dir {
					return fmt.Errorf("restore %q: %s is not a folder of the home", f.Path, d)
				}
				continue // the home has it, with its owner and mode
			}
			if made[d] {
				continue
			}
			made[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/",
				Mode: 0o755, Uid: UserUID, Gid: UserGID, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
				return err
			}
		}
		if pf, ok := home.File(p); ok && (pf.Dir || pf.Symlink != "") {
			return fmt.Errorf("restore %q: the home has a folder or link there", f.Path)
		}
		mode := f.Mode & 0o777
		if mode == 0 {
			mode = 0o644
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(p, "/"), Mode: mode,
			Size: int64(len(f.Content)), Uid: UserUID, Gid: UserGID, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(f.Content); err != nil {
			return err
		}
	}
	return tw.Close()
}
