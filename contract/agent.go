package contract

import (
	"fmt"
	"strings"
)

// Usage is the token accounting of a run. The JSON names are those Claude
// Code reports, which recorded histories keep.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// Add returns the sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:              u.InputTokens + o.InputTokens,
		OutputTokens:             u.OutputTokens + o.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + o.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + o.CacheReadInputTokens,
	}
}

// Less is u less o, no count below 0.
func (u Usage) Less(o Usage) Usage {
	return Usage{
		InputTokens:              max(u.InputTokens-o.InputTokens, 0),
		OutputTokens:             max(u.OutputTokens-o.OutputTokens, 0),
		CacheCreationInputTokens: max(u.CacheCreationInputTokens-o.CacheCreationInputTokens, 0),
		CacheReadInputTokens:     max(u.CacheReadInputTokens-o.CacheReadInputTokens, 0),
	}
}

// NonNegative is u with every negative count made 0: an agent's stream
// is the agent's to write, and a count below zero would lower a total.
func (u Usage) NonNegative() Usage {
	return Usage{
		InputTokens:              max(u.InputTokens, 0),
		OutputTokens:             max(u.OutputTokens, 0),
		CacheCreationInputTokens: max(u.CacheCreationInputTokens, 0),
		CacheReadInputTokens:     max(u.CacheReadInputTokens, 0),
	}
}

// Total is every token counted in u.
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// Outcome classifies how one agent run ended.
type Outcome string

// Outcomes of one agent run.
const (
	OutcomeSuccess     Outcome = "success"
	OutcomeAgentError  Outcome = "agent_error"
	OutcomeRateLimited Outcome = "rate_limited"
	OutcomePermanent   Outcome = "permanent_error"
	OutcomeTimeout     Outcome = "timeout"
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
