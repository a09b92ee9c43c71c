// Command apidump writes the public API of modules as text, one exported
// identifier a line with its signature, sorted, in the spirit of Go's own
// api/*.txt, so that a change to the API shows in review as a diff:
//
//	go run ./internal/cmd/apidump -o api . middleware/echo   # make api
//
// Each argument is a module's folder; its API goes to
// OUT/<module path with / as _>.txt, covering every package of the module
// but main packages, internal ones and testdata, with the build context
// fixed (linux/amd64, no cgo, no tags) so that the output does not depend
// on the machine. It reads source only (go/parser, no type checking): a
// type is written as the source spells it, parameter names left out.
//
// Lines look like:
//
//	pkg github.com/worksteal/worksteal/recruiter, func New(redis.UniversalClient, Config) (*Recruiter, error)
//	pkg github.com/worksteal/worksteal/recruiter, method (*Recruiter) Enlist(context.Context)
//	pkg github.com/worksteal/worksteal/recruiter, type Report struct, Items int
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

func main() {
	out := flag.String("o", "api", "folder the .txt files are written to")
	flag.Parse()
	if err := run(*out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "apidump:", err)
		os.Exit(1)
	}
}

func run(out string, modules []string) error {
	if len(modules) == 0 {
		return errors.New("no module folders given")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, dir := range modules {
		path, lines, err := dumpModule(dir)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		if len(lines) == 0 {
			continue // a module of commands and tests only: no API
		}
		name := strings.ReplaceAll(path, "/", "_") + ".txt"
		if err := os.WriteFile(filepath.Join(out, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

var moduleLine = regexp.MustCompile(`(?m)^module\s+"?([^\s"]+)"?\s*$`)

// dumpModule returns the module path of the module in dir and its API.
func dumpModule(dir string) (string, []string, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", nil, err
	}
	m := moduleLine.FindSubmatch(gomod)
	if m == nil {
		return "", nil, errors.New("go.mod has no module line")
	}
	modPath := string(m[1])
	var lines []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != dir {
			if name == "testdata" || name == "vendor" || name == "internal" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module: its own file
			}
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		importPath := modPath
		if rel != "." {
			importPath += "/" + filepath.ToSlash(rel)
		}
		pkgLines, err := dumpPackage(path, importPath)
		lines = append(lines, pkgLines...)
		return err
	})
	slices.Sort(lines)
	return modPath, slices.Compact(lines), err
}

// buildContext selects the files of a package the same way on every machine.
var buildContext = func() build.Context {
	c := build.Default
	c.GOOS, c.GOARCH, c.CgoEnabled, c.BuildTags = "linux", "amd64", false, nil
	return c
}()

func dumpPackage(dir, importPath string) ([]string, error) {
	bp, err := buildContext.ImportDir(dir, 0)
	var noGo *build.NoGoError
	if errors.As(err, &noGo) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if bp.Name == "main" {
		return nil, nil
	}
	fset := token.NewFileSet()
	d := dumper{prefix: "pkg " + importPath + ", "}
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			d.decl(decl)
		}
	}
	return d.lines, nil
}

type dumper struct {
	prefix string
	lines  []string
}

func (d *dumper) add(format string, args ...any) {
	d.lines = append(d.lines, d.prefix+fmt.Sprintf(format, args...))
}

func (d *dumper) decl(decl ast.Decl) {
	switch decl := decl.(type) {
	case *ast.FuncDecl:
		if !decl.Name.IsExported() {
			return
		}
		if decl.Recv == nil {
			d.add("func %s%s%s", decl.Name.Name, typeParams(decl.Type.TypeParams), signature(decl.Type))
			return
		}
		recv := decl.Recv.List[0].Type
		if !ast.IsExported(baseTypeName(recv)) {
			return
		}
		d.add("method (%s) %s%s", expr(recv), decl.Name.Name, signature(decl.Type))
	case *ast.GenDecl:
		var lastType ast.Expr // a const spec without a type or value repeats the previous one's
		for _, spec := range decl.Specs {
			switch spec := spec.(type) {
			case *ast.TypeSpec:
				d.typeSpec(spec)
			case *ast.ValueSpec:
				if spec.Type != nil || len(spec.Values) > 0 {
					lastType = spec.Type
				}
				for i, name := range spec.Names {
					if !name.IsExported() {
						continue
					}
					switch {
					case decl.Tok == token.CONST && lastType != nil:
						d.add("const %s %s", name.Name, expr(lastType))
					case decl.Tok == token.CONST && i < len(spec.Values):
						d.add("const %s = %s", name.Name, expr(spec.Values[i]))
					case decl.Tok == token.CONST:
						d.add("const %s", name.Name)
					case spec.Type != nil:
						d.add("var %s %s", name.Name, expr(spec.Type))
					case i < len(spec.Values):
						d.add("var %s %s", name.Name, valueType(spec.Values[i]))
					default:
						d.add("var %s", name.Name)
					}
				}
			}
		}
	}
}

func (d *dumper) typeSpec(spec *ast.TypeSpec) {
	if !spec.Name.IsExported() {
		return
	}
	name := spec.Name.Name + typeParams(spec.TypeParams)
	if spec.Assign.IsValid() {
		d.add("type %s = %s", name, expr(spec.Type))
		return
	}
	switch t := spec.Type.(type) {
	case *ast.StructType:
		d.add("type %s struct", name)
		for _, f := range t.Fields.List {
			if len(f.Names) == 0 {
				if ast.IsExported(baseTypeName(f.Type)) {
					d.add("type %s struct, embedded %s", name, expr(f.Type))
				}
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					d.add("type %s struct, %s %s", name, n.Name, expr(f.Type))
				}
			}
		}
	case *ast.InterfaceType:
		d.add("type %s interface", name)
		unexported := false
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 {
				d.add("type %s interface, embedded %s", name, expr(m.Type))
				continue
			}
			for _, n := range m.Names {
				if !n.IsExported() {
					unexported = true
					continue
				}
				if ft, ok := m.Type.(*ast.FuncType); ok {
					d.add("type %s interface, %s%s", name, n.Name, signature(ft))
				}
			}
		}
		if unexported {
			d.add("type %s interface, unexported methods", name)
		}
	default:
		d.add("type %s %s", name, expr(spec.Type))
	}
}

// baseTypeName is the name of a (receiver or embedded) type: T for T,
// *T, T[K], pkg.T.
func baseTypeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return baseTypeName(e.X)
	case *ast.IndexExpr:
		return baseTypeName(e.X)
	case *ast.IndexListExpr:
		return baseTypeName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.ParenExpr:
		return baseTypeName(e.X)
	}
	return ""
}

// valueType guesses the type of an untyped var from its value where the
// source makes it plain: errors.New and fmt.Errorf are errors, T{...} is
// a T, &T{...} a *T. Anything else is left out rather than guessed.
func valueType(v ast.Expr) string {
	switch v := v.(type) {
	case *ast.CallExpr:
		switch expr(v.Fun) {
		case "errors.New", "fmt.Errorf":
			return "error"
		}
	case *ast.CompositeLit:
		if v.Type != nil {
			return expr(v.Type)
		}
	case *ast.UnaryExpr:
		if lit, ok := v.X.(*ast.CompositeLit); ok && v.Op == token.AND && lit.Type != nil {
			return "*" + expr(lit.Type)
		}
	}
	return ""
}

func typeParams(fl *ast.FieldList) string {
	if fl == nil || len(fl.List) == 0 {
		return ""
	}
	var parts []string
	for _, f := range fl.List {
		names := make([]string, len(f.Names))
		for i, n := range f.Names {
			names[i] = n.Name
		}
		parts = append(parts, strings.Join(names, ", ")+" "+expr(f.Type))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// signature is a func type's parameters and results, without names.
func signature(ft *ast.FuncType) string {
	s := "(" + strings.Join(fieldTypes(ft.Params), ", ") + ")"
	results := fieldTypes(ft.Results)
	switch {
	case len(results) == 1 && (ft.Results.List[0].Names == nil || len(ft.Results.List[0].Names) == 1):
		s += " " + results[0]
	case len(results) > 0:
		s += " (" + strings.Join(results, ", ") + ")"
	}
	return s
}

// fieldTypes lists a field list's types, one per name (a, b int is int, int).
func fieldTypes(fl *ast.FieldList) []string {
	if fl == nil {
		return nil
	}
	var types []string
	for _, f := range fl.List {
		t := expr(f.Type)
		for range max(1, len(f.Names)) {
			types = append(types, t)
		}
	}
	return types
}

// expr writes a type or value expression on one line, func types without
// parameter names.
func expr(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return expr(e.X) + "." + e.Sel.Name
	case *ast.StarExpr:
		return "*" + expr(e.X)
	case *ast.ArrayType:
		if e.Len == nil {
			return "[]" + expr(e.Elt)
		}
		return "[" + expr(e.Len) + "]" + expr(e.Elt)
	case *ast.MapType:
		return "map[" + expr(e.Key) + "]" + expr(e.Value)
	case *ast.ChanType:
		switch e.Dir {
		case ast.SEND:
			return "chan<- " + expr(e.Value)
		case ast.RECV:
			return "<-chan " + expr(e.Value)
		}
		return "chan " + expr(e.Value)
	case *ast.FuncType:
		return "func" + signature(e)
	case *ast.Ellipsis:
		return "..." + expr(e.Elt)
	case *ast.ParenExpr:
		return "(" + expr(e.X) + ")"
	case *ast.IndexExpr:
		return expr(e.X) + "[" + expr(e.Index) + "]"
	case *ast.IndexListExpr:
		parts := make([]string, len(e.Indices))
		for i, x := range e.Indices {
			parts[i] = expr(x)
		}
		return expr(e.X) + "[" + strings.Join(parts, ", ") + "]"
	}
	var b bytes.Buffer
	_ = printer.Fprint(&b, token.NewFileSet(), e)
	return strings.Join(strings.Fields(b.String()), " ")
}
