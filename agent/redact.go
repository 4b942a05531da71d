package agent

import (
	"encoding/json"
	"errors"
	"strings"
)

// Redacted replaces a secret wherever text leaves the agent.
const Redacted = "[REDACTED]"

// RedactString replaces every secret (of 4 bytes or more) in s, also in the
// forms JSON encoding would give it, with Redacted.
func RedactString(s string, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) < 4 {
			continue
		}
		s = strings.ReplaceAll(s, sec, Redacted)
		if b, err := json.Marshal(sec); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != sec {
				s = strings.ReplaceAll(s, esc, Redacted)
			}
		}
	}
	return s
}

// redactErr returns err unchanged if it holds no secret, else an error with
// the secrets scrubbed from its text (the chain is dropped: a wrapped error
// could still print the secret).
func redactErr(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := RedactString(msg, secrets); red != msg {
		return errors.New(red)
	}
	return err
}

// RedactError is redactErr for drivers.
func RedactError(err error, secrets ...string) error { return redactErr(err, secrets) }
