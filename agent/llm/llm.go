package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/toolspec"
)

// A Driver is the llm agent.Driver. It keeps the conversation; use one per run.
type Driver struct {
	cfg      Config
	client   *openai.Client
	messages []openai.ChatCompletionMessage
	pending  []string // the model's tool call ids of the last step, in order
	callSeq  int      // for tool calls the server sent without an id
	started  bool
}

// New returns a driver for cfg. cfg.Skill is required.
func New(cfg Config) (*Driver, error) {
	c, err := cfg.resolve()
	if err != nil {
		return nil, agent.RedactError(fmt.Errorf("llm driver: %w", err), cfg.APIKey)
	}
	if c.Skill == nil {
		return nil, errors.New("llm driver: no skill")
	}
	return &Driver{cfg: c, client: newClient(c)}, nil
}

func newClient(c Config) *openai.Client {
	oc := openai.DefaultConfig(c.APIKey)
	oc.BaseURL = c.BaseURL
	oc.HTTPClient = &retryDoer{
		client: c.HTTPClient, max: c.MaxRetries, base: c.BackoffBase, cap: c.MaxBackoff, sleep: sleepCtx,
		log: func(msg string, args ...any) {
			c.Log.Info(msg, append(args, "provider", c.Provider, "model", c.Model)...)
		},
	}
	return openai.NewClientWithConfig(oc)
}

// Secrets returns the values a Loop should redact (the API key).
func (d *Driver) Secrets() []string {
	if d.cfg.APIKey == "" {
		return nil
	}
	return []string{d.cfg.APIKey}
}

func openaiTools() []openai.Tool {
	tools := toolspec.All()
	out := make([]openai.Tool, 0, len(tools))
	for _, t := range tools {
		out = append(out, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	return out
}

// Next implements agent.Driver.
func (d *Driver) Next(ctx context.Context, prev []agent.Exchange) (agent.Step, error) {
	var step agent.Step
	if !d.started {
		d.started = true
		sys, user := SystemPrompt(d.cfg.Skill, d.cfg.SkillDir), UserPrompt(d.cfg.Skill, d.cfg.Prompt)
		d.messages = append(d.messages,
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: sys},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: user})
		step.Messages = append(step.Messages, agent.Message{Role: "system", Content: sys}, agent.Message{Role: "user", Content: user})
	}
	// Answer every tool call of the last assistant message, in order; one
	// the loop did not run (a budget ended the step) gets a placeholder so
	// the conversation stays well-formed.
	for i, id := range d.pending {
		text := "not run"
		if i < len(prev) {
			text = toolText(prev[i], d.cfg.MaxToolText)
		}
		d.messages = append(d.messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: id, Content: text})
	}
	d.pending = nil

	req := openai.ChatCompletionRequest{
		Model:       d.cfg.Model,
		Messages:    d.messages,
		Tools:       openaiTools(),
		Temperature: d.cfg.Temperature,
		//lint:ignore SA1019 max_tokens is what OpenAI-compatible servers (Ollama, vLLM, llama.cpp) read
		MaxTokens: d.cfg.MaxTokens,
	}
	resp, err := d.client.CreateChatCompletion(ctx, req)
	if err != nil {
		return step, d.wrap(err)
	}
	step.Usage = agent.Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens, TotalTokens: resp.Usage.TotalTokens}
	if len(resp.Choices) == 0 {
		step.Done = true
		step.Note = "the model returned no choices"
		return step, nil
	}
	msg := resp.Choices[0].Message
	msg.Role = openai.ChatMessageRoleAssistant
	if strings.TrimSpace(msg.Content) != "" {
		step.Messages = append(step.Messages, agent.Message{Role: "assistant", Content: msg.Content})
	}
	if len(msg.ToolCalls) == 0 {
		d.messages = append(d.messages, msg)
		step.Done = true
		return step, nil
	}
	for i, tc := range msg.ToolCalls {
		if tc.ID == "" {
			// Some servers (older Ollama, llama.cpp) leave ids out; the
			// conversation needs them to pair results with calls.
			d.callSeq++
			tc.ID = fmt.Sprintf("call_%d", d.callSeq)
			msg.ToolCalls[i].ID = tc.ID
		}
		d.pending = append(d.pending, tc.ID)
		step.Calls = append(step.Calls, proposal(tc))
	}
	d.messages = append(d.messages, msg)
	return step, nil
}

// proposal turns a model tool call into a Proposal, rejecting an unknown
// tool or arguments that are not a JSON object.
func proposal(tc openai.ToolCall) agent.Proposal {
	p := agent.Proposal{ToolCall: agent.ToolCall{Name: tc.Function.Name, PlanReason: agent.ReasonModel}}
	raw := strings.TrimSpace(tc.Function.Arguments)
	if raw == "" {
		raw = "{}"
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
		// Keep what the model sent, as a JSON string, so the transcript holds it.
		p.Arguments, _ = json.Marshal(tc.Function.Arguments)
		why := "not a JSON object"
		if err != nil {
			why = err.Error()
		}
		p.Reject = fmt.Sprintf("error: the arguments of %s are malformed JSON (%s); send a JSON object matching the tool's schema", tc.Function.Name, why)
	} else {
		p.Arguments, _ = json.Marshal(obj)
	}
	if !toolspec.Known(tc.Function.Name) {
		p.Reject = fmt.Sprintf("error: there is no tool named %q; the tools are %s", tc.Function.Name, strings.Join(toolspec.Names(), ", "))
	}
	return p
}

// toolText is what the model sees of an exchange.
func toolText(ex agent.Exchange, limit int) string {
	r := ex.Result
	text := r.Text
	if text == "" {
		var b strings.Builder
		fmt.Fprintf(&b, "exit code %d\n", r.ExitCode)
		if r.Stdout != "" {
			b.WriteString("stdout:\n" + r.Stdout + "\n")
		}
		if r.Stderr != "" {
			b.WriteString("stderr:\n" + r.Stderr + "\n")
		}
		text = b.String()
	}
	if len(text) > limit {
		text = text[:limit] + "\n[output truncated]"
	} else if r.Truncated {
		text += "\n[output truncated]"
	}
	return text
}

// A ProviderError is an HTTP error from the model's endpoint.
type ProviderError struct {
	Provider, Model string
	Status          int
	Message         string
}

func (e *ProviderError) Error() string {
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Sprintf("%s refused the API key for model %s (HTTP %d): %s", e.Provider, e.Model, e.Status, e.Message)
	case http.StatusNotFound:
		return fmt.Sprintf("%s has no model %s or no chat endpoint at the base URL (HTTP 404): %s", e.Provider, e.Model, e.Message)
	}
	return fmt.Sprintf("%s model %s: HTTP %d: %s", e.Provider, e.Model, e.Status, e.Message)
}

// wrap names the provider and model and scrubs the key.
func (d *Driver) wrap(err error) error {
	return wrapErr(d.cfg, err)
}

func wrapErr(c Config, err error) error {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		err = &ProviderError{Provider: c.Provider, Model: c.Model, Status: apiErr.HTTPStatusCode, Message: capMsg(apiErr.Message)}
	case errors.As(err, &reqErr):
		msg := strings.TrimSpace(string(reqErr.Body))
		if msg == "" && reqErr.Err != nil {
			msg = reqErr.Err.Error()
		}
		err = &ProviderError{Provider: c.Provider, Model: c.Model, Status: reqErr.HTTPStatusCode, Message: capMsg(msg)}
	default:
		err = fmt.Errorf("%s model %s at %s: %w", c.Provider, c.Model, redactURL(c.BaseURL), err)
	}
	return agent.RedactError(err, c.APIKey)
}

func capMsg(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
