package mcptools

import (
	"bytes"
	"encoding/binary"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"
)

func TestGetrandomReply(t *testing.T) {
	tests := []struct {
		name      string
		n, flags  uint64
		wantN     uint64
		wantErrno syscall.Errno
	}{
		{name: "plain", n: 16, flags: 0, wantN: 16},
		{name: "nonblock never fails once the pool is ready", n: 16, flags: grndNonblock, wantN: 16},
		{name: "random reads the same pool", n: 32, flags: grndRandom, wantN: 32},
		{name: "insecure", n: 8, flags: grndInsecure, wantN: 8},
		{name: "nonblock random", n: 8, flags: grndNonblock | grndRandom, wantN: 8},
		{name: "insecure and random refused", n: 8, flags: grndInsecure | grndRandom, wantErrno: syscall.EINVAL},
		{name: "unknown flag refused", n: 8, flags: 0x8, wantErrno: syscall.EINVAL},
		{name: "vDSO parameter query refused", n: ^uint64(0), flags: 0xffffffff, wantErrno: syscall.EINVAL},
		{name: "upper half of flags ignored", n: 8, flags: 1 << 32, wantN: 8},
		{name: "zero length", n: 0, flags: 0, wantN: 0},
		{name: "capped at MAX_RW_COUNT", n: 1 << 40, flags: 0, wantN: 0x7ffff000},
		{name: "just under the cap", n: 0x7ffff000 - 1, wantN: 0x7ffff000 - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, errno := getrandomReply(tt.n, tt.flags)
			if n != tt.wantN || errno != tt.wantErrno {
				t.Errorf("getrandomReply(%#x, %#x) = %d, %v; want %d, %v", tt.n, tt.flags, n, errno, tt.wantN, tt.wantErrno)
			}
		})
	}
}

func TestStreamKey(t *testing.T) {
	base := streamKey([]byte("seed"), labelGetrandom, []byte("python3\x00-c\x00x\x00"), 0)
	if again := streamKey([]byte("seed"), labelGetrandom, []byte("python3\x00-c\x00x\x00"), 0); again != base {
		t.Fatal("the same inputs gave two keys")
	}
	others := map[string][32]byte{
		"seed":    streamKey([]byte("seed2"), labelGetrandom, []byte("python3\x00-c\x00x\x00"), 0),
		"label":   streamKey([]byte("seed"), labelDevice, []byte("python3\x00-c\x00x\x00"), 0),
		"cmdline": streamKey([]byte("seed"), labelGetrandom, []byte("python3\x00-c\x00y\x00"), 0),
		"index":   streamKey([]byte("seed"), labelGetrandom, []byte("python3\x00-c\x00x\x00"), 1),
		// Length prefixes: moving a byte from the label to the command
		// line is another key.
		"boundary": streamKey([]byte("seed"), labelGetrandom+"p", []byte("ython3\x00-c\x00x\x00"), 0),
	}
	for name, k := range others {
		if k == base {
			t.Errorf("changing the %s left the key as it was", name)
		}
	}
}

func TestStreamAt(t *testing.T) {
	s := newStream(streamKey([]byte("seed"), labelGetrandom, nil, 0))
	all := make([]byte, 4096)
	s.at(0, all)
	if bytes.Equal(all[:32], make([]byte, 32)) {
		t.Fatal("the stream is zeros")
	}
	for _, c := range []struct{ off, n int }{{0, 1}, {1, 15}, {15, 2}, {16, 16}, {17, 100}, {1000, 3000}, {4095, 1}} {
		got := make([]byte, c.n)
		got[0] = 0xAA // at overwrites what p held
		s.at(uint64(c.off), got)
		if !bytes.Equal(got, all[c.off:c.off+c.n]) {
			t.Errorf("at(%d, %d) is not the stream's bytes there", c.off, c.n)
		}
	}
}

// TestStreamsNext: each process with a command line gets the next stream
// of that command line, whatever other command lines came in between.
func TestStreamsNext(t *testing.T) {
	first := func(s *stream) []byte {
		b := make([]byte, 16)
		s.at(0, b)
		return b
	}
	a := newStreams([]byte("seed"))
	a1 := first(a.next([]byte("x\x00")))
	a2 := first(a.next([]byte("x\x00")))
	if bytes.Equal(a1, a2) {
		t.Error("two processes with one command line share a stream")
	}
	b := newStreams([]byte("seed"))
	b.next([]byte("other\x00"))
	b1 := first(b.next([]byte("x\x00")))
	b.next([]byte("other\x00"))
	b2 := first(b.next([]byte("x\x00")))
	if !bytes.Equal(a1, b1) || !bytes.Equal(a2, b2) {
		t.Error("another command line in between moved the streams of x")
	}
	c := newStreams([]byte("other seed"))
	if bytes.Equal(first(c.next([]byte("x\x00"))), a1) {
		t.Error("another seed gave the same stream")
	}
}

func TestDeviceBytes(t *testing.T) {
	d := deviceBytes([]byte("seed"), 4096)
	if !bytes.Equal(d, deviceBytes([]byte("seed"), 4096)) {
		t.Error("the device's bytes are not reproducible")
	}
	if bytes.Equal(d, deviceBytes([]byte("seed2"), 4096)) {
		t.Error("another seed gave the same device")
	}
	g := make([]byte, 4096)
	newStream(streamKey([]byte("seed"), labelGetrandom, nil, 0)).at(0, g)
	if bytes.Equal(d, g) {
		t.Error("the device repeats a getrandom stream")
	}
}

// seccompData is a struct seccomp_data for x/net/bpf's VM, which loads
// words big-endian where the kernel loads them in the machine's order:
// the fields are written big-endian so that the program sees their values.
func seccompData(nr int32, arch uint32) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[seccompDataNrOff:], uint32(nr))
	binary.BigEndian.PutUint32(b[seccompDataArchOff:], arch)
	return b
}

func TestGetrandomFilter(t *testing.T) {
	const (
		notify = seccompRetUserNotif
		allow  = seccompRetAllow
	)
	tests := []struct {
		name   string
		goarch string
		nr     int32
		arch   uint32
		want   uint32
	}{
		{"amd64 getrandom", "amd64", 318, auditArchX8664, notify},
		{"amd64 read", "amd64", 0, auditArchX8664, allow},
		{"amd64 openat", "amd64", 257, auditArchX8664, allow},
		{"amd64 319 (memfd_create)", "amd64", 319, auditArchX8664, allow},
		{"x32 getrandom", "amd64", 318 | x32SyscallBit, auditArchX8664, notify},
		{"i386 getrandom", "amd64", 355, auditArchI386, notify},
		{"i386 318 is not getrandom", "amd64", 318, auditArchI386, allow},
		{"x86_64 355 is not getrandom", "amd64", 355, auditArchX8664, allow},
		{"unknown arch", "amd64", 318, 0x12345678, allow},
		{"arm64 getrandom", "arm64", 278, auditArchAarch64, notify},
		{"arm64 318 is not getrandom", "arm64", 318, auditArchAarch64, allow},
		{"arm getrandom", "arm64", 384, auditArchARM, notify},
		{"arm 278 is not getrandom", "arm64", 278, auditArchARM, allow},
		{"amd64 number on arm64", "arm64", 318, auditArchX8664, allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := getrandomFilter(getrandomABIs[tt.goarch])
			if err != nil {
				t.Fatal(err)
			}
			prog, ok := bpf.Disassemble(raw)
			if !ok {
				t.Fatalf("the filter does not disassemble: %v", prog)
			}
			vm, err := bpf.NewVM(prog)
			if err != nil {
				t.Fatal(err)
			}
			got, err := vm.Run(seccompData(tt.nr, tt.arch))
			if err != nil {
				t.Fatal(err)
			}
			if uint32(got) != tt.want {
				t.Errorf("nr %#x arch %#x: %#x, want %#x", tt.nr, tt.arch, got, tt.want)
			}
		})
	}
	// The kernel refuses a program over 4096 instructions, and one whose
	// jumps leave it: each ABI adds five.
	for goarch, abis := range getrandomABIs {
		raw, _ := getrandomFilter(abis)
		if len(raw) != 5*len(abis)+1 {
			t.Errorf("%s: %d instructions", goarch, len(raw))
		}
	}
}

func TestSeccompCodec(t *testing.T) {
	b := make([]byte, seccompNotifSize+8) // a newer kernel's larger struct
	e := binary.NativeEndian
	e.PutUint64(b[0:], 0x1122334455667788)
	e.PutUint32(b[8:], 4242)
	e.PutUint32(b[12:], 0)
	e.PutUint32(b[16:], 318)
	e.PutUint32(b[20:], auditArchX8664)
	e.PutUint64(b[24:], 0x7fff0000)
	for i := range 6 {
		e.PutUint64(b[32+8*i:], uint64(100+i))
	}
	n, err := decodeNotif(b)
	if err != nil {
		t.Fatal(err)
	}
	want := seccompNotif{id: 0x1122334455667788, pid: 4242, nr: 318, arch: auditArchX8664, ip: 0x7fff0000,
		args: [6]uint64{100, 101, 102, 103, 104, 105}}
	if n != want {
		t.Errorf("decodeNotif = %+v, want %+v", n, want)
	}
	if _, err := decodeNotif(b[:seccompNotifSize-1]); err == nil {
		t.Error("a short notification was taken")
	}

	tests := []struct {
		name  string
		resp  seccompResp
		size  int
		val   int64
		errno int32
	}{
		{"bytes written", respond(7, 16, 0), 24, 16, 0},
		{"error is negative errno", respond(7, 16, syscall.EFAULT), 24, 0, -int32(syscall.EFAULT)},
		{"ENOSYS", respond(7, 0, syscall.ENOSYS), 24, 0, -int32(syscall.ENOSYS)},
		{"zero bytes", respond(7, 0, 0), 24, 0, 0},
		{"a newer kernel's size", respond(7, 5, 0), 32, 5, 0},
		{"never shorter than ours", respond(7, 5, 0), 8, 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := tt.resp.encode(tt.size)
			if len(enc) != max(tt.size, seccompNotifRespSize) {
				t.Fatalf("%d bytes", len(enc))
			}
			if id := e.Uint64(enc[0:]); id != 7 {
				t.Errorf("id %d", id)
			}
			if v := int64(e.Uint64(enc[8:])); v != tt.val {
				t.Errorf("val %d, want %d", v, tt.val)
			}
			if er := int32(e.Uint32(enc[16:])); er != tt.errno {
				t.Errorf("error %d, want %d", er, tt.errno)
			}
			if f := e.Uint32(enc[20:]); f != 0 {
				t.Errorf("flags %#x: the call must not continue to the kernel", f)
			}
			if !bytes.Equal(enc[seccompNotifRespSize:], make([]byte, len(enc)-seccompNotifRespSize)) {
				t.Error("the tail is not zero")
			}
		})
	}
}

func FuzzDecodeNotif(f *testing.F) {
	f.Add(make([]byte, seccompNotifSize))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := decodeNotif(b)
		if (err == nil) != (len(b) >= seccompNotifSize) {
			t.Fatalf("len %d: err %v", len(b), err)
		}
		if err == nil && n.id != binary.NativeEndian.Uint64(b) {
			t.Fatal("id")
		}
	})
}
