package flow

import (
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
)

// The typed keys of the search attributes named in the contract.
var (
	SearchStatus    = temporal.NewSearchAttributeKeyKeyword(contract.SearchRalphStatus)
	SearchIteration = temporal.NewSearchAttributeKeyInt64(contract.SearchRalphIteration)
	SearchCostUSD   = temporal.NewSearchAttributeKeyFloat64(contract.SearchRalphCostUSD)
	SearchRepo      = temporal.NewSearchAttributeKeyKeyword(contract.SearchRalphRepo)
	SearchHost      = temporal.NewSearchAttributeKeyKeyword(contract.SearchRalphHost)
	SearchIssue     = temporal.NewSearchAttributeKeyInt64(contract.SearchRalphIssue)
	// SearchForkedFrom is "<session>@<iteration>" of a fork or a rewound
	// session.
	SearchForkedFrom = temporal.NewSearchAttributeKeyKeyword(contract.SearchRalphForkedFrom)
)
