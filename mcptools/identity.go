package mcptools

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// An identity is the unprivileged user a tool call's processes run as. The
// shim and the file tools start as root (the agentd binary is root's alone,
// mode 0700) and take it on themselves: the shim for the command it starts,
// a file tool for itself before it touches anything.
type identity struct {
	uid, gid int
	user     string // supplementary groups come from its /etc/group entries
}

// args is the identity as the leading flags of `agentd __shim` and
// `agentd __tool`.
func (id identity) args() []string {
	return []string{"--uid", strconv.Itoa(id.uid), "--gid", strconv.Itoa(id.gid), "--user", id.user}
}

// parseIdentity reads leading --uid N, --gid N and --user NAME flags off
// args and returns the rest. With no flags the identity is the zero value
// (uid -1: run as whoever we are).
func parseIdentity(args []string) (identity, []string, error) {
	id := identity{uid: -1, gid: -1}
	for len(args) >= 2 {
		var err error
		switch args[0] {
		case "--uid":
			id.uid, err = strconv.Atoi(args[1])
		case "--gid":
			id.gid, err = strconv.Atoi(args[1])
		case "--user":
			id.user = args[1]
		default:
			return id, args, nil
		}
		if err != nil {
			return id, args, fmt.Errorf("%s: %w", args[0], err)
		}
		args = args[2:]
	}
	return id, args, nil
}

// drops reports whether taking on id changes who we are: we are root and
// id names another user.
func (id identity) drops() bool {
	return os.Geteuid() == 0 && id.uid > 0 && id.gid >= 0
}

// check reports an identity that /etc/passwd does not bear out: the user
// must be listed there with the uid given.
func (id identity) check() error {
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return fmt.Errorf("user %s: %w", id.user, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 3 && f[0] == id.user {
			if f[2] != strconv.Itoa(id.uid) {
				return fmt.Errorf("user %s has uid %s, not %d", id.user, f[2], id.uid)
			}
			return nil
		}
	}
	return fmt.Errorf("user %s: not in /etc/passwd", id.user)
}

// groups returns id's supplementary groups: its primary group and every
// group of /etc/group listing its name, as initgroups would.
func (id identity) groups() []uint32 {
	gs := []uint32{uint32(id.gid)}
	f, err := os.Open("/etc/group")
	if err != nil || id.user == "" {
		return gs
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), ":")
		if len(parts) < 4 {
			continue
		}
		gid, err := strconv.ParseUint(parts[2], 10, 32)
		if err != nil || slices.Contains(gs, uint32(gid)) {
			continue
		}
		if slices.Contains(strings.Split(parts[3], ","), id.user) {
			gs = append(gs, uint32(gid))
		}
	}
	return gs
}

// errStillRoot reports a privilege drop that did not take.
var errStillRoot = errors.New("still privileged after dropping")

// become makes the whole process (every thread) id: supplementary groups,
// then gid, then uid, real, effective and saved alike. Changing uid away
// from root also makes the process not dumpable, so the user cannot trace
// it, read its memory or take its descriptors.
func (id identity) become() error {
	gs := id.groups()
	ints := make([]int, len(gs))
	for i, g := range gs {
		ints[i] = int(g)
	}
	if err := unix.Setgroups(ints); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := setresgid(id.gid); err != nil {
		return fmt.Errorf("setresgid %d: %w", id.gid, err)
	}
	if err := setresuid(id.uid); err != nil {
		return fmt.Errorf("setresuid %d: %w", id.uid, err)
	}
	if os.Geteuid() == 0 || os.Getuid() == 0 || setresuid(0) == nil {
		return errStillRoot
	}
	return nil
}
