package agent

import (
	"fmt"
	"strings"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input float64 `json:"input" mapstructure:"input" yaml:"input"`
	// CachedInput prices input tokens read from the provider's cache;
	// zero means they cost what Input does.
	CachedInput float64 `json:"cached_input,omitempty" mapstructure:"cached_input" yaml:"cached_input"`
	Output      float64 `json:"output" mapstructure:"output" yaml:"output"`
}

// Prices are prices by model name.
type Prices map[string]Price

// DefaultPrices are the list prices of current OpenAI and Google models,
// in USD per million tokens (standard tier, prompts up to 200k tokens),
// for the backends whose CLI reports tokens but no cost. agent.prices
// adds to them and overrides them.
var DefaultPrices = Prices{
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

// Merge returns p with o's entries added, o winning.
func (p Prices) Merge(o Prices) Prices {
	out := make(Prices, len(p)+len(o))
	for m, pr := range p {
		out[m] = pr
	}
	for m, pr := range o {
		out[strings.ToLower(m)] = pr
	}
	return out
}

// Cost prices u for model. Input tokens read from cache are in
// CacheReadInputTokens, the others in InputTokens. ok is false, with a
// note for a person, when p has no price for model.
func (p Prices) Cost(model string, u Usage) (cost float64, ok bool, note string) {
	if model == "" {
		return 0, false, "cost unknown: the agent did not name its model"
	}
	pr, found := p[strings.ToLower(model)]
	if !found {
		return 0, false, fmt.Sprintf("cost unknown: no price for model %q (set agent.prices)", model)
	}
	cached := pr.CachedInput
	if cached == 0 {
		cached = pr.Input
	}
	cost = (float64(u.InputTokens+u.CacheCreationInputTokens)*pr.Input +
		float64(u.CacheReadInputTokens)*cached +
		float64(u.OutputTokens)*pr.Output) / 1e6
	return cost, true, ""
}

// Validate reports a price that is negative.
func (p Prices) Validate() error {
	for m, pr := range p {
		if pr.Input < 0 || pr.CachedInput < 0 || pr.Output < 0 {
			return fmt.Errorf("price of model %q is negative", m)
		}
		if strings.TrimSpace(m) == "" {
			return fmt.Errorf("a price has no model name")
		}
	}
	return nil
}
