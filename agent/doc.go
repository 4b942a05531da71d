// Package agent runs the agent loop: a Driver (an OpenAI-compatible model,
// the model-free literal driver, or a replay of a transcript) proposes tool
// calls, the Loop runs them through a ToolSession (the MCP client into the
// sandbox), feeds the results back, records every turn to a JSON-lines
// transcript, and stops when the driver is done or a budget ends.
//
// agent sits between the skill and the sandbox's tools. It must never import
// Docker or the orchestrator, never read environment variables or flags (the
// API key comes in through Config), and never let the API key reach an
// error, a transcript, a log or a report.
package agent
