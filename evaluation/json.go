package evaluation

import (
	_ "embed"
	"encoding/json"
	"io"
)

// Schema is the JSON Schema of the evaluation JSON (WriteJSON).
//
//go:embed schema/eval.schema.json
var Schema []byte

// WriteJSON writes rep as indented JSON, as documented by Schema.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
