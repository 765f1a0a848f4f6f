package agent

import (
	"github.com/durable-ralph/ralph/contract"
)

// DefaultPrices are the list prices of current OpenAI and Google models,
// in USD per million tokens (standard tier, prompts up to 200k tokens),
// for the backends whose CLI reports tokens but no cost. agent.prices
// adds to them and overrides them.
var DefaultPrices = contract.Prices{
	"gpt-5":                  {Input: 1.25, CachedInput: 0.125, Output: 10},
	"gpt-5-codex":            {Input: 1.25, CachedInput: 0.125, Output: 10},
	"gpt-5-mini":             {Input: 0.25, CachedInput: 0.025, Output: 2},
	"gpt-5-nano":             {Input: 0.05, CachedInput: 0.005, Output: 0.4},
	"gpt-5.1":                {Input: 1.25, CachedInput: 0.125, Output: 10},
	"gpt-5.1-codex":          {Input: 1.25, CachedInput: 0.125, Output: 10},
	"gpt-5.1-codex-max":      {Input: 1.25, CachedInput: 0.125, Output: 10},
	"gpt-5.1-codex-mini":     {Input: 0.25, CachedInput: 0.025, Output: 2},
	"gpt-5.2":                {Input: 1.75, CachedInput: 0.175, Output: 14},
	"gpt-5.2-codex":          {Input: 1.75, CachedInput: 0.175, Output: 14},
	"gemini-2.5-pro":         {Input: 1.25, CachedInput: 0.125, Output: 10},
	"gemini-2.5-flash":       {Input: 0.3, CachedInput: 0.03, Output: 2.5},
	"gemini-2.5-flash-lite":  {Input: 0.1, CachedInput: 0.01, Output: 0.4},
	"gemini-3-pro-preview":   {Input: 2, CachedInput: 0.2, Output: 12},
	"gemini-3-flash-preview": {Input: 0.5, CachedInput: 0.05, Output: 3},
}
