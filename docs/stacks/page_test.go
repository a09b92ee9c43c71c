package stacks

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// snippet is a Go block of docs/stacks.md, after a comment that names
// the code it shows: "<!-- body: f -->", the body of func f less its
// final return statement; "<!-- decls: a b -->", the declarations of a
// and b (with their doc comments), a blank line apart.
var snippet = regexp.MustCompile("(?s)<!-- (body|decls): ([^>]+?) -->\n```go\n(.*?)```")

// TestPageShowsTheCode: every snippet of docs/stacks.md that names its
// code is that code, to the byte, so that compiling this package
// compiles the page; and every stack function is shown.
func TestPageShowsTheCode(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../stacks.md")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	sources := map[string][]byte{}
	var files []*ast.File
	names, _ := filepath.Glob("*_test.go")
	for _, name := range names {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		sources[name] = src
		files = append(files, f)
	}
	text := func(from, to token.Pos) string {
		p := fset.Position(from)
		return string(sources[p.Filename][p.Offset:fset.Position(to).Offset])
	}
	shown := map[string]bool{}
	matches := snippet.FindAllSubmatch(page, -1)
	for _, m := range matches {
		kind, want := string(m[1]), string(m[3])
		var parts []string
		for _, name := range strings.Fields(string(m[2])) {
			shown[name] = true
			decl := find(files, name)
			if decl == nil {
				t.Errorf("the page shows %s, which this package does not declare", name)
				continue
			}
			parts = append(parts, declText(decl, kind, text))
		}
		if got := strings.Join(parts, "\n\n") + "\n"; got != want {
			t.Errorf("the page's snippet of %s differs from the code:\n%s\nthe code:\n%s", m[2], want, got)
		}
	}
	if len(matches) < 11 {
		t.Errorf("the page names the code of %d snippets, want 11: one per stack, and connect's interceptor", len(matches))
	}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if ok && fd.Recv == nil && hasRecruiterParam(fd) && !shown[fd.Name.Name] && fd.Name.Name != "echoV4" {
				t.Errorf("the page does not show %s", fd.Name.Name)
			}
		}
	}
}

// find is the top-level function or type called name, or the method
// called name as Type.Method.
func find(files []*ast.File, name string) ast.Node {
	recv, method, isMethod := strings.Cut(name, ".")
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				switch {
				case isMethod && d.Recv != nil && d.Name.Name == method:
					if id, ok := d.Recv.List[0].Type.(*ast.Ident); ok && id.Name == recv {
						return d
					}
				case !isMethod && d.Recv == nil && d.Name.Name == name:
					return d
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == name {
						return d
					}
				}
			}
		}
	}
	return nil
}

// declText is a body less its final return, dedented once, or a whole
// declaration with its doc comment.
func declText(decl ast.Node, kind string, text func(from, to token.Pos) string) string {
	if fd, ok := decl.(*ast.FuncDecl); ok && kind == "body" {
		// The lines between the braces, less a final return statement's.
		from, to := fd.Body.Lbrace+1, fd.Body.Rbrace
		if n := len(fd.Body.List); n > 0 {
			if ret, ok := fd.Body.List[n-1].(*ast.ReturnStmt); ok {
				to = ret.Pos()
			}
		}
		lines := strings.Split(strings.Trim(text(from, to), " \t\n"), "\n")
		for i := range lines {
			lines[i] = strings.TrimPrefix(lines[i], "\t")
		}
		return strings.Join(lines, "\n")
	}
	from := decl.Pos()
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Doc != nil {
			from = d.Doc.Pos()
		}
	case *ast.GenDecl:
		if d.Doc != nil {
			from = d.Doc.Pos()
		}
	}
	return text(from, decl.End())
}

func hasRecruiterParam(fd *ast.FuncDecl) bool {
	for _, p := range fd.Type.Params.List {
		if star, ok := p.Type.(*ast.StarExpr); ok {
			if sel, ok := star.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Recruiter" {
				return true
			}
		}
	}
	return false
}
