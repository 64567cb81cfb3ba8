// Package luacheck finds, in a Lua script, the constructs that Redis's Lua
// 5.1 and the embedded store's Lua (gopher-lua, inside miniredis) evaluate
// differently. The store's scripts must run identically on redis-server,
// ElastiCache Valkey and the embedded store that `make run` gives every
// newcomer; a construct listed here once made the local runner refuse every
// request while CI, which ran only redis-server, stayed green (issue 18).
//
// Each rule names a difference seen on both engines (the package's tests
// run every rule's example on a real redis-server and on the embedded
// store, and fail if the engines come to agree):
//
//   - multiple-assignment: gopher-lua assigns some targets of `a, b = …`
//     before it has read every expression of the statement, so a name
//     assigned on the left and read elsewhere in the statement takes its new
//     value (yuin/gopher-lua#440: `a, b = b, a` gives b, b).
//   - number-to-string: Lua 5.1 writes numbers with "%.14g", gopher-lua with
//     Go's shortest form (tostring(1/3), "at " .. 1e15, table.concat): write
//     numbers with string.format and an explicit format instead.
//   - fractional-argument: a Lua number passed to redis.call is sent as
//     "%.17g" by Redis and in Go's shortest form by the embedded store (0.1
//     is 0.10000000000000001 against 0.1): pass string.format's text, or a
//     whole number (math.floor, math.ceil).
//   - format: string.format with %q, or with fewer arguments than its
//     directives, is an error on Redis and text on gopher-lua.
//   - library: bit, struct and cmsgpack exist only in Redis; os, io,
//     require, dofile and loadfile only in gopher-lua; cjson encodes an
//     empty table and numbers differently.
//
// Not checkable from the text, and kept by other means: tonumber of an
// exponent without a decimal point ("1e+06") is nil in gopher-lua, so the
// store never sends one (go-redis writes floats with 'f'; the settings do
// too) and TestEveryAcceptedRateRuns runs the extremes on both engines.
package luacheck

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// A Finding is one construct the engines evaluate differently.
type Finding struct {
	Line int
	Rule string // multiple-assignment, number-to-string, fractional-argument, format, library
	Text string // what to do instead
}

func (f Finding) String() string { return fmt.Sprintf("line %d: %s: %s", f.Line, f.Rule, f.Text) }

// Check parses src and returns its findings, in source order.
func Check(src string) ([]Finding, error) {
	chunk, err := parse.Parse(strings.NewReader(src), "script")
	if err != nil {
		return nil, err
	}
	c := &checker{}
	c.stmts(chunk)
	return c.found, nil
}

type checker struct{ found []Finding }

func (c *checker) add(line int, rule, format string, args ...any) {
	c.found = append(c.found, Finding{Line: line, Rule: rule, Text: fmt.Sprintf(format, args...)})
}

func (c *checker) stmts(list []ast.Stmt) {
	for _, s := range list {
		c.stmt(s)
	}
}

func (c *checker) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		c.assignment(s)
		c.exprs(s.Lhs...)
		c.exprs(s.Rhs...)
	case *ast.LocalAssignStmt:
		c.localAssignment(s)
		c.exprs(s.Exprs...)
	case *ast.FuncCallStmt:
		c.expr(s.Expr)
	case *ast.DoBlockStmt:
		c.stmts(s.Stmts)
	case *ast.WhileStmt:
		c.expr(s.Condition)
		c.stmts(s.Stmts)
	case *ast.RepeatStmt:
		c.stmts(s.Stmts)
		c.expr(s.Condition)
	case *ast.IfStmt:
		c.expr(s.Condition)
		c.stmts(s.Then)
		c.stmts(s.Else)
	case *ast.NumberForStmt:
		c.exprs(s.Init, s.Limit, s.Step)
		c.stmts(s.Stmts)
	case *ast.GenericForStmt:
		c.exprs(s.Exprs...)
		c.stmts(s.Stmts)
	case *ast.FuncDefStmt:
		c.expr(s.Func)
	case *ast.ReturnStmt:
		c.exprs(s.Exprs...)
	}
}

func (c *checker) exprs(list ...ast.Expr) {
	for _, e := range list {
		if e != nil {
			c.expr(e)
		}
	}
}

func (c *checker) expr(e ast.Expr) {
	switch e := e.(type) {
	case *ast.IdentExpr:
		c.global(e)
	case *ast.AttrGetExpr:
		c.exprs(e.Object, e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			c.exprs(f.Key, f.Value)
		}
	case *ast.FuncCallExpr:
		c.call(e)
		c.exprs(e.Func, e.Receiver)
		c.exprs(e.Args...)
	case *ast.LogicalOpExpr:
		c.exprs(e.Lhs, e.Rhs)
	case *ast.RelationalOpExpr:
		c.exprs(e.Lhs, e.Rhs)
	case *ast.StringConcatOpExpr:
		for _, side := range []ast.Expr{e.Lhs, e.Rhs} {
			if numeric(side) {
				c.add(side.Line(), "number-to-string", "a number joined with '..' is written as %%.14g by Redis and in Go's shortest form by the embedded store; use string.format")
			}
		}
		c.exprs(e.Lhs, e.Rhs)
	case *ast.ArithmeticOpExpr:
		c.exprs(e.Lhs, e.Rhs)
	case *ast.UnaryMinusOpExpr:
		c.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		c.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		c.expr(e.Expr)
	case *ast.FunctionExpr:
		c.stmts(e.Stmts)
	}
}

// assignment: in `a, b[i] = x, y` no name assigned on the left may be read
// anywhere else in the statement.
func (c *checker) assignment(s *ast.AssignStmt) {
	if len(s.Lhs) < 2 {
		return
	}
	assigned := map[string]bool{}
	for _, l := range s.Lhs {
		if id, ok := l.(*ast.IdentExpr); ok {
			assigned[id.Value] = true
		}
	}
	var reads []ast.Expr
	for _, l := range s.Lhs {
		if a, ok := l.(*ast.AttrGetExpr); ok {
			reads = append(reads, a.Object, a.Key)
		}
	}
	reads = append(reads, s.Rhs...)
	for _, name := range names(reads...) {
		if assigned[name] {
			c.add(s.Line(), "multiple-assignment", "%q is assigned on the left and read in the same statement, which gopher-lua evaluates out of order (yuin/gopher-lua#440); use one statement per assignment", name)
			return
		}
	}
}

// localAssignment: `local a, b = …` must not read an outer a or b.
func (c *checker) localAssignment(s *ast.LocalAssignStmt) {
	if len(s.Names) < 2 {
		return
	}
	declared := map[string]bool{}
	for _, n := range s.Names {
		declared[n] = true
	}
	for _, name := range names(s.Exprs...) {
		if declared[name] {
			c.add(s.Line(), "multiple-assignment", "%q is declared and read in the same statement; use one statement per local", name)
			return
		}
	}
}

// Names of globals that only one engine has, or that behave differently.
var libraries = map[string]string{
	"bit": "only Redis has it", "struct": "only Redis has it", "cmsgpack": "only Redis has it",
	"cjson": "the engines encode empty tables and numbers differently",
	"os":    "only the embedded store has it", "io": "only the embedded store has it",
	"require": "only the embedded store has it", "dofile": "only the embedded store has it", "loadfile": "only the embedded store has it",
}

// global flags a library one engine lacks. Locals of those names are
// assumed not to occur (the scripts declare none).
func (c *checker) global(id *ast.IdentExpr) {
	if why, ok := libraries[id.Value]; ok {
		c.add(id.Line(), "library", "%s: %s", id.Value, why)
	}
}

func (c *checker) call(f *ast.FuncCallExpr) {
	switch callee(f) {
	case "tostring", "table.concat":
		c.add(f.Line(), "number-to-string", "%s writes numbers as %%.14g on Redis and in Go's shortest form on the embedded store; use string.format", callee(f))
	case "redis.call", "redis.pcall":
		for _, a := range f.Args {
			if fractional(a) {
				c.add(a.Line(), "fractional-argument", "a fractional number is sent as %%.17g by Redis and in Go's shortest form by the embedded store; pass string.format's text or a whole number")
			}
		}
	case "string.format":
		c.format(f)
	}
}

var directive = regexp.MustCompile(`%[-+ #0]*[0-9]*(\.[0-9]+)?([a-zA-Z%])`)

// format checks a literal format against its arguments.
func (c *checker) format(f *ast.FuncCallExpr) {
	if len(f.Args) == 0 {
		return
	}
	lit, ok := f.Args[0].(*ast.StringExpr)
	if !ok {
		return
	}
	n := 0
	for _, d := range directive.FindAllStringSubmatch(lit.Value, -1) {
		switch d[2] {
		case "%":
		case "q":
			c.add(f.Line(), "format", "%%q escapes a newline differently on the engines")
			n++
		case "s":
			if n+1 < len(f.Args) && numeric(f.Args[n+1]) {
				c.add(f.Line(), "number-to-string", "%%s writes a number as %%.14g on Redis and in Go's shortest form on the embedded store; use %%d or %%.Nf")
			}
			n++
		default:
			n++
		}
	}
	if n != len(f.Args)-1 && !variadic(f.Args[len(f.Args)-1]) {
		c.add(f.Line(), "format", "%d directives for %d arguments: an error on Redis, text on the embedded store", n, len(f.Args)-1)
	}
}

// callee is the dotted name of a called function ("redis.call"), or "".
func callee(f *ast.FuncCallExpr) string {
	switch fn := f.Func.(type) {
	case *ast.IdentExpr:
		return fn.Value
	case *ast.AttrGetExpr:
		obj, ok1 := fn.Object.(*ast.IdentExpr)
		key, ok2 := fn.Key.(*ast.StringExpr)
		if ok1 && ok2 {
			return obj.Value + "." + key.Value
		}
	}
	return ""
}

// numeric reports whether e is certainly a number: a literal, arithmetic,
// or a call of math.* or tonumber. A name may hold anything and is not
// flagged; the scripts keep numbers and text apart by name.
func numeric(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.NumberExpr:
		v, err := strconv.ParseFloat(e.Value, 64)
		// Small whole literals are written alike ("%.14g" keeps 14 digits).
		return err != nil || v != math.Trunc(v) || math.Abs(v) >= 1e14
	case *ast.ArithmeticOpExpr, *ast.UnaryMinusOpExpr:
		return true
	case *ast.FuncCallExpr:
		name := callee(e)
		return name == "tonumber" || strings.HasPrefix(name, "math.")
	}
	return false
}

// fractional reports whether e may be a number with a fraction (or so
// large that Redis writes it with an exponent): a literal with a fraction,
// or arithmetic with /, ^, % or such a literal outside math.floor or
// math.ceil.
func fractional(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.NumberExpr:
		v, err := strconv.ParseFloat(e.Value, 64)
		return err != nil || v != math.Trunc(v) || math.Abs(v) >= 1e17
	case *ast.ArithmeticOpExpr:
		return e.Operator == "/" || e.Operator == "^" || e.Operator == "%" || fractional(e.Lhs) || fractional(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		return fractional(e.Expr)
	}
	return false
}

// variadic: a last argument that is a call or ... may supply any number.
func variadic(e ast.Expr) bool {
	switch e.(type) {
	case *ast.FuncCallExpr, *ast.Comma3Expr:
		return true
	}
	return false
}

// names lists every name read in the expressions, nested ones included.
func names(list ...ast.Expr) []string {
	var out []string
	var walk func(e ast.Expr)
	walk = func(e ast.Expr) {
		switch e := e.(type) {
		case *ast.IdentExpr:
			out = append(out, e.Value)
		case *ast.AttrGetExpr:
			walk(e.Object)
			walk(e.Key)
		case *ast.TableExpr:
			for _, f := range e.Fields {
				if f.Key != nil {
					walk(f.Key)
				}
				walk(f.Value)
			}
		case *ast.FuncCallExpr:
			walk(e.Func)
			if e.Receiver != nil {
				walk(e.Receiver)
			}
			for _, a := range e.Args {
				walk(a)
			}
		case *ast.LogicalOpExpr:
			walk(e.Lhs)
			walk(e.Rhs)
		case *ast.RelationalOpExpr:
			walk(e.Lhs)
			walk(e.Rhs)
		case *ast.StringConcatOpExpr:
			walk(e.Lhs)
			walk(e.Rhs)
		case *ast.ArithmeticOpExpr:
			walk(e.Lhs)
			walk(e.Rhs)
		case *ast.UnaryMinusOpExpr:
			walk(e.Expr)
		case *ast.UnaryNotOpExpr:
			walk(e.Expr)
		case *ast.UnaryLenOpExpr:
			walk(e.Expr)
		}
	}
	for _, e := range list {
		walk(e)
	}
	return out
}
