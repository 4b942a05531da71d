package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sandboxctl/sandboxctl/agent"
)

// CheckResult reports what Check found. The fields are plain data for the
// CLI to print.
type CheckResult struct {
	Provider string `json:"provider"`
	BaseURL  string `json:"base_url"`
	Model    string `json:"model"`
	// ModelsListed is false when the endpoint has no model listing (some
	// servers do not implement /models); ModelFound is meaningful only then.
	ModelsListed   bool          `json:"models_listed"`
	ModelFound     bool          `json:"model_found"`
	Models         int           `json:"models"`
	ToolsSupported bool          `json:"tools_supported"`
	Latency        time.Duration `json:"latency_ns"`
	Notes          []string      `json:"notes,omitempty"`
}

// Check tests connectivity to cfg's endpoint: it lists the models (noting
// whether cfg.Model is among them) and makes one tiny tool-calling request.
// The error is non-nil when the endpoint could not be used at all (bad key,
// unknown model, unreachable); a model that answers without calling the tool
// is a result with ToolsSupported false. cfg.Skill is not needed; with
// MaxRetries zero, Check retries once.
func Check(ctx context.Context, cfg Config) (CheckResult, error) {
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 1 // a check should answer quickly
	}
	c, err := cfg.resolve()
	if err != nil {
		return CheckResult{}, agent.RedactError(fmt.Errorf("check model: %w", err), cfg.APIKey)
	}
	res := CheckResult{Provider: c.Provider, BaseURL: redactURL(c.BaseURL), Model: c.Model}
	client := newClient(c)
	models, err := client.ListModels(ctx)
	switch {
	case err == nil:
		res.ModelsListed = true
		res.Models = len(models.Models)
		for _, m := range models.Models {
			if m.ID == c.Model {
				res.ModelFound = true
			}
		}
		if !res.ModelFound {
			res.Notes = append(res.Notes, fmt.Sprintf("model %s is not in the endpoint's list of %d models", c.Model, res.Models))
		}
	case isStatus(err, http.StatusUnauthorized, http.StatusForbidden):
		return res, fmt.Errorf("check model: %w", wrapErr(c, err))
	default:
		if ctx.Err() != nil {
			return res, fmt.Errorf("check model: %w", wrapErr(c, err))
		}
		res.Notes = append(res.Notes, "listing models failed: "+wrapErr(c, err).Error())
	}
	start := time.Now()
	resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model: c.Model,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser,
			Content: "Call the ping tool with the word \"pong\". Do not answer in text."}},
		Tools: []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: "ping", Description: "Replies to a ping.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}`)}}},
		//lint:ignore SA1019 max_tokens is what OpenAI-compatible servers (Ollama, vLLM, llama.cpp) read
		MaxTokens: 64,
	})
	res.Latency = time.Since(start)
	if err != nil {
		if isStatus(err, http.StatusBadRequest) && strings.Contains(strings.ToLower(err.Error()), "tool") {
			res.Notes = append(res.Notes, "the endpoint refused a request with tools: "+wrapErr(c, err).Error())
			return res, nil
		}
		return res, fmt.Errorf("check model: %w", wrapErr(c, err))
	}
	if len(resp.Choices) > 0 && len(resp.Choices[0].Message.ToolCalls) > 0 {
		res.ToolsSupported = true
	} else {
		res.Notes = append(res.Notes, "the model answered without calling the tool; it may not support tool calls")
	}
	for i, n := range res.Notes {
		res.Notes[i] = agent.RedactString(n, []string{c.APIKey})
	}
	return res, nil
}

func isStatus(err error, codes ...int) bool {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	code := 0
	switch {
	case errors.As(err, &apiErr):
		code = apiErr.HTTPStatusCode
	case errors.As(err, &reqErr):
		code = reqErr.HTTPStatusCode
	}
	for _, c := range codes {
		if code == c {
			return true
		}
	}
	return false
}
