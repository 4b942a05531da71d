package netcapture

import (
	"net/http"
	"strings"
)

// requestURL is req's absolute URL as the client meant it: the proxy's
// absolute form, or the scheme of the connection (TLS or not) with the
// Host header and the request URI.
func requestURL(req *http.Request, host string) string {
	if req.URL.IsAbs() {
		return req.URL.String()
	}
	return requestScheme(req) + "://" + requestHostPort(req, host) + req.URL.RequestURI()
}

// requestBase is scheme://host[:port] of req.
func requestBase(req *http.Request, host string) string {
	if req.URL.IsAbs() {
		return req.URL.Scheme + "://" + req.URL.Host
	}
	return requestScheme(req) + "://" + requestHostPort(req, host)
}

func requestScheme(req *http.Request) string {
	if req.URL.IsAbs() && req.URL.Scheme != "" {
		return req.URL.Scheme
	}
	if m, ok := req.Context().Value(metaKey).(connMeta); ok && m.tls || req.TLS != nil {
		return "https"
	}
	return "http"
}

func requestHostPort(req *http.Request, host string) string {
	if req.URL.IsAbs() && req.URL.Host != "" {
		return req.URL.Host
	}
	if req.Host != "" {
		return strings.ToLower(req.Host)
	}
	return host
}

// userAgentProduct is the first product of a User-Agent ("pip/23.0.1").
func userAgentProduct(ua string) string {
	p, _, _ := strings.Cut(strings.TrimSpace(ua), " ")
	return capString(p, 64)
}
