package llm

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/skill"
)

// Providers.
const (
	ProviderOpenAI     = "openai"
	ProviderOpenRouter = "openrouter"
	ProviderOllama     = "ollama"
	ProviderCustom     = "custom"
)

// DefaultBaseURL gives each provider's base URL.
var DefaultBaseURL = map[string]string{
	ProviderOpenAI:     "https://api.openai.com/v1",
	ProviderOpenRouter: "https://openrouter.ai/api/v1",
	ProviderOllama:     "http://localhost:11434/v1",
}

// Config configures the driver. Provider and Model are required; APIKey is
// required for openai and openrouter.
type Config struct {
	Provider    string // "openai", "openrouter", "ollama", "custom" ("" with BaseURL: custom)
	BaseURL     string // "" : the provider's default
	Model       string
	APIKey      string `json:"-"` // never logged, never written, scrubbed from errors
	Prompt      string // the user prompt; "": derived from the skill's description
	Temperature float32
	MaxTokens   int // per completion; 0: the server's default

	Skill    *skill.Skill // required by New (not by Check)
	SkillDir string       // where the skill is installed in the sandbox

	HTTPClient  *http.Client  // nil: a client with a 5-minute timeout
	MaxRetries  int           // on 429, 5xx and transport errors; 0: 5, <0: none
	BackoffBase time.Duration // 0: 1s; doubled per attempt, with jitter
	MaxBackoff  time.Duration // 0: 60s; also caps Retry-After
	Log         *slog.Logger  // nil: discard
	// MaxToolText caps the tool output fed back to the model per call; 0: 16 KiB.
	MaxToolText int
}

// String describes c without the key, so printing or logging a Config
// (fmt's %v and %+v, %#v, slog) cannot leak it.
func (c Config) String() string {
	key := "none"
	if c.APIKey != "" {
		key = Redacted
	}
	return fmt.Sprintf("llm.Config{Provider:%s BaseURL:%s Model:%s APIKey:%s}", c.Provider, redactURL(c.BaseURL), c.Model, key)
}

// GoString implements fmt.GoStringer like String.
func (c Config) GoString() string { return c.String() }

// LogValue implements slog.LogValuer like String.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Redacted stands for the key wherever a Config is printed.
const Redacted = "[REDACTED]"

// Validate reports the first problem with c, with the defaults applied.
func (c Config) Validate() error {
	_, err := c.resolve()
	return err
}

func (c Config) resolve() (Config, error) {
	if c.Provider == "" && c.BaseURL != "" {
		c.Provider = ProviderCustom
	}
	switch c.Provider {
	case ProviderOpenAI, ProviderOpenRouter, ProviderOllama:
		if c.BaseURL == "" {
			c.BaseURL = DefaultBaseURL[c.Provider]
		}
	case ProviderCustom:
		if c.BaseURL == "" {
			return c, errors.New("provider custom needs a base URL")
		}
	case "":
		return c, errors.New("no model provider given")
	default:
		return c, fmt.Errorf("unknown provider %q (want openai, openrouter, ollama or custom)", c.Provider)
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("base URL %q is not an http(s) URL", redactURL(c.BaseURL))
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Model == "" {
		return c, fmt.Errorf("no model given for provider %s", c.Provider)
	}
	if c.APIKey == "" && (c.Provider == ProviderOpenAI || c.Provider == ProviderOpenRouter) {
		return c, fmt.Errorf("provider %s needs an API key", c.Provider)
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 5 * time.Minute}
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 5
	} else if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = time.Minute
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.MaxToolText <= 0 {
		c.MaxToolText = 16 << 10
	}
	return c, nil
}

// redactURL drops userinfo and the query (either could hold a key).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}
