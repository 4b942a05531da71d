// Package llm is the agent driver backed by any OpenAI-compatible chat
// completions endpoint (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server,
// LM Studio, a custom base URL), through github.com/sashabaranov/go-openai.
//
// The skill is the system prompt; the user prompt is Config.Prompt or a task
// derived from the skill's description. The model's tool calls become
// agent.Proposals; malformed arguments and unknown tools are rejected and fed
// back to the model as tool errors.
//
// llm never reads the environment (the API key comes in Config.APIKey) and
// never lets the key reach an error, a log line or a transcript: every error
// and message leaving the driver is scrubbed of it.
package llm
