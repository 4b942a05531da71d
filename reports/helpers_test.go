package reports_test

import "encoding/base64"

func b64enc(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
