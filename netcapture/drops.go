package netcapture

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Kernel drop policy: a datagram the kernel drops because a sink's socket
// buffer was full never reaches the sink, so the sink cannot record it;
// the kernel counts it. At the end the jail reads those counters for its
// own sockets (by inode, in /proc/net/udp{,6}) and the namespace's
// listen-queue drops (/proc/net/netstat), and reports any as evidence
// known to be missing.

// socketDrops returns a notice for each sink socket the kernel dropped
// datagrams on, and one for TCP connections dropped at the listen queue.
func socketDrops(dns, udp []net.PacketConn, at time.Time) []trace.Event {
	var out []trace.Event
	counts := udpDropsByInode("/proc/net/udp", "/proc/net/udp6")
	for _, g := range []struct {
		what string
		pcs  []net.PacketConn
	}{{"DNS sink", dns}, {"UDP catch-all", udp}} {
		var n int64
		for _, pc := range g.pcs {
			if ino, ok := socketInode(pc); ok {
				n += counts[ino]
			}
		}
		if n > 0 {
			out = append(out, trace.Event{Time: at, Source: trace.SourceUDP, Type: trace.TypeJailNotice, Data: &trace.Notice{
				Message: fmt.Sprintf("the kernel dropped %d datagrams sent to the %s (socket buffer full): they were not recorded", n, g.what),
				Lost:    n, Incomplete: true}})
		}
	}
	if f, err := os.Open("/proc/net/netstat"); err == nil {
		drops := listenDrops(f)
		f.Close()
		if drops > 0 {
			out = append(out, trace.Event{Time: at, Source: trace.SourceTCP, Type: trace.TypeJailNotice, Data: &trace.Notice{
				Message: fmt.Sprintf("the kernel dropped %d TCP connections in the jail's namespace at a full listen queue: they were not recorded", drops),
				Lost:    drops, Incomplete: true}})
		}
	}
	return out
}

// socketInode returns the inode of pc's socket.
func socketInode(pc net.PacketConn) (uint64, bool) {
	sc, ok := pc.(syscall.Conn)
	if !ok {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var st syscall.Stat_t
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = syscall.Fstat(int(fd), &st) }); err != nil || serr != nil {
		return 0, false
	}
	return st.Ino, true
}

// udpDropsByInode reads the drops column of /proc/net/udp-style files.
func udpDropsByInode(files ...string) map[uint64]int64 {
	out := map[uint64]int64{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		for ino, n := range parseUDPDrops(f) {
			out[ino] += n
		}
		f.Close()
	}
	return out
}

// parseUDPDrops parses /proc/net/udp: the inode is the tenth field and the
// drops the last.
func parseUDPDrops(r io.Reader) map[uint64]int64 {
	out := map[uint64]int64{}
	sc := bufio.NewScanner(io.LimitReader(r, 16<<20))
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue // header
		}
		f := strings.Fields(sc.Text())
		if len(f) < 13 {
			continue
		}
		ino, err1 := strconv.ParseUint(f[9], 10, 64)
		drops, err2 := strconv.ParseInt(f[len(f)-1], 10, 64)
		if err1 != nil || err2 != nil || drops <= 0 {
			continue
		}
		out[ino] += drops
	}
	return out
}

// listenDrops reads TcpExt ListenDrops (which includes ListenOverflows)
// from /proc/net/netstat: a header line of names, then a line of values.
func listenDrops(r io.Reader) int64 {
	sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var names []string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "TcpExt:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i := 1; i < len(f) && i < len(names); i++ {
			if names[i] == "ListenDrops" {
				n, _ := strconv.ParseInt(f[i], 10, 64)
				return n
			}
		}
		return 0
	}
	return 0
}
