package netcapture

import (
	"encoding/base64"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// DNS-over-HTTPS policy: a DoH request is a DNS query like any other. The
// wire format (RFC 8484: POST application/dns-message, or GET ?dns=) and
// the JSON API (GET ?name=&type=, as Google's and Cloudflare's resolvers
// serve it) are decoded and handed to the DNS sink, which records a
// dns_query event (transport "doh") and answers with the same fake
// addresses as on port 53; the HTTP exchange is recorded too.

// dohQuery returns the DNS message a request carries, and whether the
// client wants the JSON form back.
func dohQuery(req *http.Request, body []byte) (msg []byte, asJSON bool, ok bool) {
	ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	q := req.URL.Query()
	switch {
	case req.Method == http.MethodPost && ct == "application/dns-message":
		return body, false, len(body) > 0
	case req.Method == http.MethodGet && q.Get("dns") != "":
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(q.Get("dns"), "="))
		return b, false, err == nil && len(b) > 0
	case req.Method == http.MethodGet && q.Get("name") != "" &&
		(strings.Contains(req.Header.Get("Accept"), "dns-json") || q.Get("ct") == "application/dns-json" ||
			strings.Contains(req.URL.Path, "resolve") || strings.Contains(req.URL.Path, "dns-query")):
		t := dns.TypeA
		if ts := strings.ToUpper(q.Get("type")); ts != "" {
			if v, found := dns.StringToType[ts]; found {
				t = v
			} else if n, err := strconv.ParseUint(ts, 10, 16); err == nil {
				t = uint16(n)
			}
		}
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(q.Get("name")), t)
		b, err := m.Pack()
		return b, true, err == nil
	}
	return nil, false, false
}

// dohResponse answers a DoH request through the DNS sink.
func (s *Sink) dohResponse(req *http.Request, msg []byte, asJSON bool, client string) (response, bool) {
	if s.dns == nil {
		return response{}, false
	}
	out := s.dns.handle(msg, "doh", client)
	if out == nil {
		return s.resp.newResponse(http.StatusBadRequest, "text/plain", []byte("bad request\n"), "doh"), true
	}
	if !asJSON {
		return s.resp.newResponse(http.StatusOK, "application/dns-message", out, "doh"), true
	}
	var m dns.Msg
	if err := m.Unpack(out); err != nil {
		return s.resp.newResponse(http.StatusBadRequest, "text/plain", []byte("bad request\n"), "doh"), true
	}
	type q struct {
		Name string `json:"name"`
		Type uint16 `json:"type"`
	}
	type a struct {
		Name string `json:"name"`
		Type uint16 `json:"type"`
		TTL  uint32 `json:"TTL"`
		Data string `json:"data"`
	}
	j := struct {
		Status   int  `json:"Status"`
		TC       bool `json:"TC"`
		RD       bool `json:"RD"`
		RA       bool `json:"RA"`
		AD       bool `json:"AD"`
		CD       bool `json:"CD"`
		Question []q  `json:"Question"`
		Answer   []a  `json:"Answer,omitempty"`
	}{Status: m.Rcode, RD: true, RA: true}
	for _, qq := range m.Question {
		j.Question = append(j.Question, q{qq.Name, qq.Qtype})
	}
	for _, rr := range m.Answer {
		h := rr.Header()
		data := strings.TrimPrefix(rr.String(), h.String())
		j.Answer = append(j.Answer, a{h.Name, h.Rrtype, h.Ttl, strings.TrimSpace(data)})
	}
	b, _ := json.Marshal(j)
	return s.resp.newResponse(http.StatusOK, "application/dns-json", b, "doh"), true
}
