package contract_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

func TestReadLimitAnswer(t *testing.T) {
	l := contract.Limits{MaxIterations: 10, MaxRuntime: 2 * time.Hour, MaxCostUSD: 5}
	for _, tc := range []struct {
		reason contract.Reason
		ans    contract.Answer
		want   contract.LimitAnswer
		err    string
	}{
		{contract.ReasonMaxCost, contract.Answer{Answer: "raise to $10"}, contract.LimitAnswer{Raise: contract.SetLimitsRequest{MaxCostUSD: 10}}, ""},
		{contract.ReasonMaxCost, contract.Answer{Answer: "12.5 USD please"}, contract.LimitAnswer{Raise: contract.SetLimitsRequest{MaxCostUSD: 12.5}}, ""},
		{contract.ReasonMaxCost, contract.Answer{Answer: "8"}, contract.LimitAnswer{Raise: contract.SetLimitsRequest{MaxCostUSD: 8}}, ""},
		{contract.ReasonMaxIterations, contract.Answer{Answer: "8"}, contract.LimitAnswer{Raise: contract.SetLimitsRequest{MaxIterations: 8}}, ""},
		{contract.ReasonMaxRuntime, contract.Answer{Answer: "3"}, contract.LimitAnswer{Raise: contract.SetLimitsRequest{MaxRuntime: 3 * time.Hour}}, ""},
		{contract.ReasonMaxCost, contract.Answer{Answer: "40 iterations, 8h and $20."}, contract.LimitAnswer{Raise: contract.SetLimitsRequest{MaxIterations: 40, MaxRuntime: 8 * time.Hour, MaxCostUSD: 20}}, ""},
		{contract.ReasonMaxRuntime, contract.Answer{Answer: "90 minutes"}, contract.LimitAnswer{Raise: contract.SetLimitsRequest{MaxRuntime: 90 * time.Minute}}, ""},
		{contract.ReasonMaxCost, contract.Answer{Approve: true}, contract.LimitAnswer{Raise: contract.SetLimitsRequest{MaxCostUSD: 10}}, ""},
		{contract.ReasonMaxIterations, contract.Answer{Approve: true}, contract.LimitAnswer{Raise: contract.SetLimitsRequest{MaxIterations: 20}}, ""},
		{contract.ReasonMaxRuntime, contract.Answer{Approve: true}, contract.LimitAnswer{Raise: contract.SetLimitsRequest{MaxRuntime: 4 * time.Hour}}, ""},
		{contract.ReasonMaxCost, contract.Answer{Approve: true, Reason: "$7"}, contract.LimitAnswer{Raise: contract.SetLimitsRequest{MaxCostUSD: 7}}, ""},
		{contract.ReasonMaxCost, contract.Answer{Reject: true, Reason: "too dear"}, contract.LimitAnswer{Stop: true}, ""},
		{contract.ReasonMaxCost, contract.Answer{Answer: "Stop."}, contract.LimitAnswer{Stop: true}, ""},
		{contract.ReasonMaxCost, contract.Answer{Answer: "no"}, contract.LimitAnswer{Stop: true}, ""},
		{contract.ReasonMaxCost, contract.Answer{Answer: "sure, why not"}, contract.LimitAnswer{}, "say how far to raise it"},
		{contract.ReasonMaxCost, contract.Answer{Answer: "$ten"}, contract.LimitAnswer{}, `"$ten" is not an amount of dollars`},
		{contract.ReasonMaxCost, contract.Answer{Answer: "3x"}, contract.LimitAnswer{}, `"3x" is not a number`},
	} {
		got, err := contract.ReadLimitAnswer(tc.reason, l, tc.ans)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, "%+v", tc.ans)
			continue
		}
		require.NoError(t, err, "%+v", tc.ans)
		require.Equal(t, tc.want, got, "%+v", tc.ans)
	}
}

func TestLimitsAsk(t *testing.T) {
	ask := contract.Limits{OnLimit: contract.OnLimitAsk}
	require.True(t, ask.Asks(contract.ReasonMaxCost))
	require.True(t, ask.Asks(contract.ReasonMaxIterations))
	require.True(t, ask.Asks(contract.ReasonMaxRuntime))
	require.False(t, ask.Asks(contract.ReasonStopped))
	require.False(t, contract.Limits{}.Asks(contract.ReasonMaxCost))
	require.False(t, contract.Limits{OnLimit: contract.OnLimitEnd}.Asks(contract.ReasonMaxCost))
}
