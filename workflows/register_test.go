package workflows_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/workflows"
)

const module = "github.com/durable-ralph/ralph"

// TestAllIsEveryWorkflow: All holds every workflow function the workflow
// packages define, once: a workflow added without a line in All fails
// here, not on a worker that cannot run it.
func TestAllIsEveryWorkflow(t *testing.T) {
	var listed []string
	for _, fn := range workflows.All {
		full := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
		require.NotContains(t, listed, full)
		listed = append(listed, full)
	}
	var defined []string
	dirs, err := filepath.Glob("*")
	require.NoError(t, err)
	for _, dir := range dirs {
		for _, f := range goFiles(t, dir, false) {
			for _, d := range f.file.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && isWorkflow(fn) {
					defined = append(defined, module+"/workflows/"+dir+"."+fn.Name.Name)
				}
			}
		}
	}
	require.NotEmpty(t, defined)
	require.ElementsMatch(t, defined, listed)
}

// isWorkflow reports whether fn is a workflow function: exported, taking
// a workflow.Context first and returning an error last (after a result,
// or alone).
func isWorkflow(fn *ast.FuncDecl) bool {
	if fn.Recv != nil || !fn.Name.IsExported() || len(fn.Type.Params.List) == 0 || fn.Type.Results == nil {
		return false
	}
	first, ok := fn.Type.Params.List[0].Type.(*ast.SelectorExpr)
	results := fn.Type.Results.List
	last, isIdent := results[len(results)-1].Type.(*ast.Ident)
	return ok && first.Sel.Name == "Context" && isIdent && last.Name == "error" && len(results) <= 2
}

// TestOneRegistrationList: outside the workflow packages' own unit tests
// (which register what they test, beside mocks), no code registers a
// Durable Ralph workflow itself: the worker, the workflow-only worker,
// the replayer and the end-to-end tests all go through Register, so none
// can miss a workflow another has.
func TestOneRegistrationList(t *testing.T) {
	registers := 0
	err := filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") && p != ".." {
			return filepath.SkipDir
		}
		// The workflow packages' unit tests, and the helpers only they
		// use, register what they test.
		testOnly := filepath.ToSlash(p) == "../workflows/workflowtest"
		inWorkflows := strings.HasPrefix(filepath.ToSlash(p), "../workflows/")
		for _, f := range goFiles(t, p, true) {
			if testOnly || inWorkflows && f.test {
				continue
			}
			ours := ourWorkflowImports(f.file)
			ast.Inspect(f.file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && sel.Sel.Name == "Register" && ours[id.Name] == "workflows" {
					registers++
				}
				if !strings.HasPrefix(sel.Sel.Name, "RegisterWorkflow") {
					return true
				}
				if arg, ok := call.Args[0].(*ast.SelectorExpr); ok {
					if pkg, ok := arg.X.(*ast.Ident); ok && ours[pkg.Name] != "" {
						t.Errorf("%s registers %s.%s itself: use workflows.Register", f.path, pkg.Name, arg.Sel.Name)
					}
				}
				return true
			})
		}
		return nil
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, registers, 3, "the worker, the workflow-only worker and the replayer call workflows.Register")
}

// ourWorkflowImports maps the names f imports the workflow packages by
// to their last path element.
func ourWorkflowImports(f *ast.File) map[string]string {
	ours := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p != module+"/workflows" && !strings.HasPrefix(p, module+"/workflows/") {
			continue
		}
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		ours[name] = path.Base(p)
	}
	return ours
}

// goFile is a parsed Go file.
type goFile struct {
	path string
	file *ast.File
	test bool
}

// goFiles parses the Go files of dir, its tests too when tests is set.
func goFiles(t *testing.T, dir string, tests bool) []goFile {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // not a folder
	}
	var files []goFile
	for _, e := range entries {
		test := strings.HasSuffix(e.Name(), "_test.go")
		if e.IsDir() || filepath.Ext(e.Name()) != ".go" || test && !tests {
			continue
		}
		p := filepath.Join(dir, e.Name())
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		files = append(files, goFile{path: p, file: f, test: test})
	}
	return files
}
