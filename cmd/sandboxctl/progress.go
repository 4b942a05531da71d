package main

// Progress policy: on a terminal, one status line rewritten in place (a
// spinner, the phase, the tool call running) on stderr; otherwise plain
// timestamped lines, one per phase and per tool call, so logs of sweeps stay
// readable. Results never go to stderr. Every message passes through
// oneLine (safetext): the only escape sequences written are the display's
// own.

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sandboxctl/sandboxctl/safetext"
)

type progressUI struct {
	w        io.Writer
	tty      bool
	mu       sync.Mutex
	start    time.Time
	phase    string
	line     string
	frame    int
	stop     chan struct{}
	finished chan struct{}
	width    int
}

func newProgressUI(w io.Writer, tty bool) *progressUI {
	p := &progressUI{w: w, tty: tty, start: time.Now(), width: 80}
	if tty {
		p.stop = make(chan struct{})
		p.finished = make(chan struct{})
		go p.spin()
	}
	return p
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (p *progressUI) spin() {
	defer close(p.finished)
	t := time.NewTicker(120 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.frame++
			p.redraw()
			p.mu.Unlock()
		}
	}
}

// redraw rewrites the status line; p.mu is held.
func (p *progressUI) redraw() {
	s := fmt.Sprintf("%s %5.1fs %-8s %s", spinnerFrames[p.frame%len(spinnerFrames)],
		time.Since(p.start).Seconds(), p.phase, p.line)
	if utf8.RuneCountInString(s) > p.width-1 {
		r := []rune(s)
		s = string(r[:p.width-2]) + "…"
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", s)
}

// Phase records a new phase with a message.
func (p *progressUI) Phase(phase, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.line = phase, oneLine(msg)
	if p.tty {
		p.redraw()
		return
	}
	fmt.Fprintf(p.w, "sandboxctl: %6.1fs %-8s %s\n", time.Since(p.start).Seconds(), phase, p.line)
}

// Update rewrites the status line on a terminal and prints nothing
// otherwise: progress within a phase (packages installed so far).
func (p *progressUI) Update(phase, msg string) {
	if !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.line = phase, oneLine(msg)
	p.redraw()
}

// Event prints a line that stays (a finished tool call) above the status line.
func (p *progressUI) Event(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[K  %s\n", oneLine(msg))
		p.redraw()
		return
	}
	fmt.Fprintf(p.w, "sandboxctl: %6.1fs %-8s %s\n", time.Since(p.start).Seconds(), p.phase, oneLine(msg))
}

// Close ends the spinner and clears its line.
func (p *progressUI) Close() {
	if !p.tty {
		return
	}
	close(p.stop)
	<-p.finished
	p.mu.Lock()
	fmt.Fprint(p.w, "\r\x1b[K")
	p.mu.Unlock()
}

// oneLine is s on one line for the progress display: what the skill
// controls (commands, paths) shows its control and bidi characters as
// escapes, and is cut at 200 runes.
func oneLine(s string) string {
	return safetext.Line(strings.TrimSpace(s), 200)
}
