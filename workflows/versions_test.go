package workflows_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// TestVersions holds the versioning plan: every GetVersion change ID of
// the workflow code is a contract.Change with the day it shipped and the
// meaning of each version it branches on, and a recorded history takes
// each of its old branches when replayed (GetVersion returns
// DefaultVersion and every version below the newest), so the code kept
// for runs that started before a change is run by a test.
func TestVersions(t *testing.T) {
	inCode := changeIDs(t)
	require.NotEmpty(t, inCode)
	changes := map[string]contract.Change{}
	for _, c := range contract.Changes {
		require.NotContains(t, changes, c.ID, "contract.Changes lists %q twice", c.ID)
		changes[c.ID] = c
		_, err := time.Parse(time.DateOnly, c.Since)
		require.NoError(t, err, "the Since of change %q", c.ID)
		require.Contains(t, inCode, c.ID, "contract.Changes lists %q, which no workflow code uses: remove it once its old branches are retired", c.ID)
	}
	seen := replayAll(t)
	for _, id := range sortedKeys(inCode) {
		t.Run(id, func(t *testing.T) {
			c, ok := changes[id]
			require.True(t, ok, "change %q is not in contract.Changes", id)
			require.Len(t, c.Means, int(inCode[id])+1, "contract.Changes says what each version of %q does, DefaultVersion first", id)
			old := []workflow.Version{workflow.DefaultVersion}
			for v := workflow.Version(1); v < inCode[id]; v++ {
				old = append(old, v)
			}
			for _, v := range old {
				require.True(t, seen[id][v], "no recorded history takes the branch of version %d of change %q: record one from the code before the change (docs/durability.md)", v, id)
			}
		})
	}
}

// changeIDs are the change IDs the workflow code passes to GetVersion,
// each with the newest version it supports.
func changeIDs(t *testing.T) map[string]workflow.Version {
	t.Helper()
	ids := map[string]workflow.Version{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() == "testdata" {
			return err
		}
		fset := token.NewFileSet()
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		var files []*ast.File
		for _, e := range entries {
			if e.IsDir() || isTest(e.Name()) {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(path, e.Name()), nil, 0)
			if err != nil {
				return err
			}
			files = append(files, f)
		}
		maps.Copy(ids, versionCalls(t, fset, files))
		return nil
	})
	require.NoError(t, err)
	return ids
}

// versionCalls are the change IDs and newest versions of the GetVersion
// calls of one package's files, its change IDs string literals or its
// own string constants.
func versionCalls(t *testing.T, fset *token.FileSet, files []*ast.File) map[string]workflow.Version {
	t.Helper()
	consts := map[string]string{}
	var calls []*ast.CallExpr
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if lit, ok := valueAt(n, i).(*ast.BasicLit); ok && lit.Kind == token.STRING {
						consts[name.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "GetVersion" && len(n.Args) == 4 {
					calls = append(calls, n)
				}
			}
			return true
		})
	}
	ids := map[string]workflow.Version{}
	for _, c := range calls {
		var id string
		switch a := c.Args[1].(type) {
		case *ast.BasicLit:
			id, _ = strconv.Unquote(a.Value)
		case *ast.Ident:
			id = consts[a.Name]
		case *ast.CallExpr:
			// fmt.Sprintf(contract.RewindGate, n): a family of markers.
			if sel, ok := a.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sprintf" && len(a.Args) > 0 {
				if f, ok := a.Args[0].(*ast.SelectorExpr); ok && f.Sel.Name == "RewindGate" {
					id = contract.RewindGate
				}
			}
		}
		lit, ok := c.Args[3].(*ast.BasicLit)
		require.True(t, ok && id != "", "%s: GetVersion needs a change ID and a newest version the test can read", fset.Position(c.Pos()))
		newest, err := strconv.Atoi(lit.Value)
		require.NoError(t, err)
		ids[id] = workflow.Version(newest)
	}
	return ids
}

// valueAt is the value of the i-th name of spec, nil without one.
func valueAt(spec *ast.ValueSpec, i int) ast.Expr {
	if i < len(spec.Values) {
		return spec.Values[i]
	}
	return nil
}

// isTest reports whether a file is no Go source of the package: a test
// or not Go at all.
func isTest(name string) bool {
	return filepath.Ext(name) != ".go" || strings.HasSuffix(name, "_test.go")
}

// replayAll replays every recorded history of every workflow package and
// returns, for each change ID, the versions GetVersion returned.
func replayAll(t *testing.T) map[string]map[workflow.Version]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("*", workflowtest.HistoriesDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	rec := &versions{seen: map[string]map[workflow.Version]bool{}}
	for _, f := range files {
		replayer, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
			Interceptors: []interceptor.WorkerInterceptor{rec},
		})
		require.NoError(t, err)
		workflows.Register(replayer)
		require.NoError(t, workflowtest.ReplayFile(replayer, f), f)
	}
	return rec.seen
}

// versions records what GetVersion returns in the workflows it
// intercepts.
type versions struct {
	interceptor.WorkerInterceptorBase
	mu   sync.Mutex
	seen map[string]map[workflow.Version]bool
}

func (r *versions) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &versionsInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, r: r}
}

type versionsInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	r *versions
}

func (i *versionsInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&versionsOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, r: i.r})
}

type versionsOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	r *versions
}

func (o *versionsOutbound) GetVersion(ctx workflow.Context, changeID string, minSupported, maxSupported workflow.Version) workflow.Version {
	v := o.Next.GetVersion(ctx, changeID, minSupported, maxSupported)
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	changeID = contract.ChangeFamily(changeID)
	if o.r.seen[changeID] == nil {
		o.r.seen[changeID] = map[workflow.Version]bool{}
	}
	o.r.seen[changeID][v] = true
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return slices.Clip(keys)
}
