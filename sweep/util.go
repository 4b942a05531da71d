package sweep

import (
	"encoding/json"
	"regexp"
)

var traceIDRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{2,62}$`)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
