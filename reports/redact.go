package reports

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/trace"
)

// A redactor replaces planted tokens' plain values with "[canary:<id>]" in
// what a report shows. events.jsonl keeps the raw record.
type redactor struct{ r *strings.Replacer }

func newRedactor(set *canary.Set) *redactor {
	var pairs []string
	for _, t := range set.Tokens() {
		for _, n := range append([]string{t.Value}, t.Needles...) {
			if len(n) >= canary.MinNeedle {
				pairs = append(pairs, n, "[canary:"+t.ID+"]")
			}
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	return &redactor{strings.NewReplacer(pairs...)}
}

func (x *redactor) s(s string) string {
	if x == nil {
		return s
	}
	return x.r.Replace(s)
}

func (x *redactor) b(b []byte) []byte {
	if x == nil || b == nil {
		return b
	}
	return []byte(x.r.Replace(string(b)))
}

func (x *redactor) raw(b json.RawMessage) json.RawMessage {
	if x == nil || len(b) == 0 {
		return b
	}
	// Replace inside the JSON text; a token value holds no JSON
	// metacharacters, and the replacement holds none either.
	out := []byte(x.r.Replace(string(b)))
	if !json.Valid(out) {
		return json.RawMessage(`{"redacted":true}`)
	}
	return bytes.Clone(out)
}

func (x *redactor) strs(ss []string) []string {
	if x == nil || ss == nil {
		return ss
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = x.s(s)
	}
	return out
}

// event returns a copy of e whose payload has every token value replaced.
func (x *redactor) event(e trace.Event) trace.Event {
	if x == nil {
		return e
	}
	switch d := e.Data.(type) {
	case *trace.ToolCall:
		c := *d
		c.Arguments, c.Stdout, c.Stderr, c.Error = x.raw(d.Arguments), x.s(d.Stdout), x.s(d.Stderr), x.s(d.Error)
		e.Data = &c
	case *trace.Exec:
		c := *d
		c.Argv, c.Path, c.Cwd = x.strs(d.Argv), x.s(d.Path), x.s(d.Cwd)
		e.Data = &c
	case *trace.File:
		c := *d
		c.Path, c.NewPath = x.s(d.Path), x.s(d.NewPath)
		e.Data = &c
	case *trace.DNSQuery:
		c := *d
		c.Name, c.Questions, c.Raw = x.s(d.Name), x.strs(d.Questions), x.b(d.Raw)
		e.Data = &c
	case *trace.HTTPExchange:
		c := *d
		c.URL, c.Host, c.SNI, c.Body = x.s(d.URL), x.s(d.Host), x.s(d.SNI), x.b(d.Body)
		if d.Headers != nil {
			c.Headers = map[string][]string{}
			for k, v := range d.Headers {
				c.Headers[k] = x.strs(v)
			}
		}
		e.Data = &c
	case *trace.Connection:
		c := *d
		c.FirstBytes, c.Name = x.b(d.FirstBytes), x.s(d.Name)
		e.Data = &c
	case *trace.TLSHello:
		c := *d
		c.SNI = x.s(d.SNI)
		e.Data = &c
	case *trace.FSChange:
		c := *d
		c.Path = x.s(d.Path)
		e.Data = &c
	case *trace.PackageFetch:
		c := *d
		c.Name, c.URL, c.Registry = x.s(d.Name), x.s(d.URL), x.s(d.Registry)
		e.Data = &c
	case *trace.GitExchange:
		c := *d
		c.URL, c.Repo, c.User, c.Refs, c.Content = x.s(d.URL), x.s(d.Repo), x.s(d.User), x.strs(d.Refs), x.b(d.Content)
		e.Data = &c
	case *trace.Mail:
		c := *d
		c.AuthUser, c.AuthSecret, c.From, c.To, c.Subject = x.s(d.AuthUser), x.s(d.AuthSecret), x.s(d.From), x.strs(d.To), x.s(d.Subject)
		c.Helo, c.Commands, c.Data, c.Name = x.s(d.Helo), x.strs(d.Commands), x.b(d.Data), x.s(d.Name)
		e.Data = &c
	}
	return e
}
