// Package layout holds rules of the repository's shape as tests: no
// function outside tests longer than maxFuncLines, no file outside tests
// longer than maxFileLines. The import rules are in contract's tests.
package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Limits of the code outside tests.
const (
	maxFuncLines = 80
	maxFileLines = 600
)

// TestSizes walks the module's Go files outside tests and reports every
// function (declared or literal) and file over the limits.
func TestSizes(t *testing.T) {
	root := filepath.Join("..", "..")
	var problems []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if n := strings.Count(string(src), "\n"); n > maxFileLines {
			problems = append(problems, rel+": file of "+strconv.Itoa(n)+" lines")
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			name := "func literal"
			switch fn := n.(type) {
			case *ast.FuncDecl:
				body, name = fn.Body, fn.Name.Name
			case *ast.FuncLit:
				body = fn.Body
			}
			if body == nil {
				return true
			}
			start := fset.Position(n.Pos()).Line
			if lines := fset.Position(body.Rbrace).Line - start + 1; lines > maxFuncLines {
				problems = append(problems, rel+":"+strconv.Itoa(start)+": "+name+" of "+strconv.Itoa(lines)+" lines")
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, problems, "over %d lines a function or %d a file; split them by step or concern", maxFuncLines, maxFileLines)
}
