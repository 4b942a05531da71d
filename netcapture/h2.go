package netcapture

//lint:file-ignore SA1019 http.Server cannot serve HTTP/2 on one connection it did not accept (the sink accepted and sniffed it); http2.Server.ServeConn can, and this file is its only caller

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/http2"
)

// serveHTTP2Conn serves HTTP/2 on c, a connection the sink accepted and
// sniffed, until it ends: by prior knowledge, or after an h2c Upgrade when
// upgrade is the request that asked for it (with its HTTP2-Settings).
func (ss *session) serveHTTP2Conn(c net.Conn, m connMeta, upgrade *http.Request, settings []byte) {
	srv := &http2.Server{IdleTimeout: 30 * time.Second, MaxReadFrameSize: 1 << 20}
	srv.ServeConn(c, &http2.ServeConnOpts{
		Context:        context.WithValue(context.WithValue(ss.ctx, sessKey, ss), metaKey, m),
		Handler:        http.HandlerFunc(ss.s.serveHTTP),
		BaseConfig:     &http.Server{ReadTimeout: httpReadTimeout, WriteTimeout: httpReadTimeout, ErrorLog: log.New(io.Discard, "", 0)},
		UpgradeRequest: upgrade,
		Settings:       settings,
	})
}
