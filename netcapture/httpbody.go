package netcapture

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"slices"
)

// requestBody is what was read of a request's body.
type requestBody struct {
	kept       []byte // the first BodyCap bytes, for the event
	size       int64  // bytes read in all
	spool      string // spool file of the whole request, "" when the event holds it all
	spoolCut   bool   // the spool file was cut (its cap, the budget)
	unfinished bool   // the body did not reach its end
	digest     string // SHA-256 of every byte read
}

// readRequestBody reads req's body to its end (up to maxBodyDrain, then
// the connection is given up), keeping the first keepN bytes in memory.
// When the body goes past them, or spoolHead is set (the event will hold
// a cut URL or headers), the whole request, head and body, is written to a
// spool file as well, so every byte can be scanned.
func (s *Sink) readRequestBody(req *http.Request, url string, keepN int64, spoolHead bool) requestBody {
	var rb requestBody
	var keep bytes.Buffer
	var err error
	sum := sha256.New()
	body := io.Reader(nil)
	if req.Body != nil {
		body = io.TeeReader(req.Body, sum)
		// One byte past the cap tells whether the body goes on.
		var n int64
		n, err = io.Copy(&keep, io.LimitReader(body, keepN+1))
		rb.size = n
	}
	more := int64(keep.Len()) > keepN
	if more || spoolHead {
		f := s.spool.Create("http")
		_, _ = f.Write(requestHead(req, url))
		_, _ = f.Write(keep.Bytes())
		if more && err == nil {
			var n int64
			n, err = io.Copy(f, io.LimitReader(body, maxBodyDrain))
			rb.size += n
			if n == maxBodyDrain {
				// Given up: what follows is neither read nor counted.
				rb.unfinished, rb.spoolCut = true, true
			}
		}
		rb.spool, rb.spoolCut = f.Close()
		rb.spoolCut = rb.spoolCut || rb.unfinished
	}
	if err != nil && !errors.Is(err, io.EOF) {
		rb.unfinished = true
	}
	if keep.Len() > 0 {
		rb.kept = slices.Clip(keep.Bytes()[:min(int64(keep.Len()), keepN)])
	}
	rb.digest = hex.EncodeToString(sum.Sum(nil))
	return rb
}

// requestHead is the request line and headers as received (names in
// canonical form, one line per value).
func requestHead(req *http.Request, url string) []byte {
	var b bytes.Buffer
	b.WriteString(req.Method + " " + url + " " + req.Proto + "\r\n")
	if req.Host != "" {
		b.WriteString("Host: " + req.Host + "\r\n")
	}
	_ = req.Header.Write(&b)
	b.WriteString("\r\n")
	return b.Bytes()
}
