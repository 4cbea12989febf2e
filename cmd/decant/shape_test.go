package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestThinCLI keeps cmd/decant wiring only: the workflows live in
// apply/migrate and the SQL in the source and target packages, so no
// function here grows past 80 lines and no string literal holds SQL.
func TestThinCLI(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sql := regexp.MustCompile(`\b(SELECT .+|INSERT INTO|UPDATE \S+ SET|DELETE FROM|(CREATE|ALTER|DROP) (TABLE|SCHEMA|INDEX|PUBLICATION|SUBSCRIPTION|SEQUENCE)|TRUNCATE|SET (SESSION|LOCAL|TRANSACTION))\b|pg_[a-z_]+\(`)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Body == nil {
					return true
				}
				lines := fset.Position(n.Body.Rbrace).Line - fset.Position(n.Pos()).Line + 1
				if lines > 80 {
					t.Errorf("%s: func %s is %d lines long (at most 80 in cmd/decant: move the work into a library package)", fset.Position(n.Pos()), n.Name.Name, lines)
				}
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(n.Value); err == nil && sql.MatchString(s) {
					t.Errorf("%s: SQL in cmd/decant (%.40q): it belongs in the source or target package", fset.Position(n.Pos()), s)
				}
			}
			return true
		})
	}
}
