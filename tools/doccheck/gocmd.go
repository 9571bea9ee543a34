package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// checkGo checks a go command's arguments (after "go"), run from cwd.
func (c *Checker) checkGo(args []string, cwd string) []string {
	for len(args) > 1 && args[0] == "-C" {
		cwd = filepath.Join(cwd, args[1])
		args = args[2:]
	}
	if len(args) == 0 {
		return nil
	}
	switch args[0] {
	case "run":
		return c.checkGoRun(args[1:], cwd)
	case "test":
		return c.checkGoTest(args[1:], cwd)
	case "build", "vet", "generate", "install", "list":
		var msgs []string
		for _, a := range args[1:] {
			if isLocal(a) {
				if _, err := c.dir(cwd, a); err != nil {
					msgs = append(msgs, fmt.Sprintf("go %s %s: %v", args[0], a, err))
				}
			}
		}
		return msgs
	}
	return nil
}

// buildValueFlags are go build's flags that take a value as the next
// argument.
var buildValueFlags = map[string]bool{
	"C": true, "o": true, "p": true, "tags": true, "ldflags": true, "gcflags": true,
	"asmflags": true, "exec": true, "mod": true, "modfile": true, "overlay": true,
	"pgo": true, "toolexec": true, "coverpkg": true, "covermode": true,
}

// testValueFlags are go test's flags (and its test binary's) that take a
// value as the next argument.
var testValueFlags = map[string]bool{
	"run": true, "bench": true, "fuzz": true, "skip": true, "list": true,
	"timeout": true, "count": true, "cpu": true, "benchtime": true, "parallel": true,
	"fuzztime": true, "fuzzminimizetime": true, "shuffle": true, "vettool": true,
	"coverprofile": true, "cpuprofile": true, "memprofile": true, "blockprofile": true,
	"mutexprofile": true, "trace": true, "outputdir": true,
}

// flagName splits "-name=value" or "--name" into name, value and whether
// a value was given with =.
func flagName(a string) (name, value string, eq bool) {
	return strings.Cut(strings.TrimLeft(a, "-"), "=")
}

// isLocal says whether a go package argument is a relative path.
func isLocal(a string) bool {
	return a == "." || a == ".." || strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../")
}

// dir returns the absolute directory of the package pattern pat (./x,
// ./x/, ./x/...) run from cwd, which must exist.
func (c *Checker) dir(cwd, pat string) (string, error) {
	d := strings.TrimSuffix(strings.TrimSuffix(pat, "..."), "/")
	if d == "" {
		d = "."
	}
	abs := filepath.Join(c.Root, cwd, d)
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", fmt.Errorf("no such directory")
	}
	return abs, nil
}

var mainRE = regexp.MustCompile(`(?m)^package main\b`)

// checkGoRun checks `go run [build flags] package [arguments]`: a local
// package must be a main package, and its flags must be defined there (a
// string literal naming them) or be runsc flags.
func (c *Checker) checkGoRun(args []string, cwd string) []string {
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		if name, _, eq := flagName(args[i]); buildValueFlags[name] && !eq {
			i++
		}
	}
	if i >= len(args) {
		return []string{"go run: no package"}
	}
	pkg := args[i]
	if !isLocal(pkg) || strings.HasSuffix(pkg, ".go") {
		return nil // a module's package (gazelle@v0.47.0), or a file
	}
	d, err := c.dir(cwd, pkg)
	if err != nil {
		return []string{fmt.Sprintf("go run %s: %v", pkg, err)}
	}
	src := goSources(d, false, false)
	if !mainRE.MatchString(src) {
		return []string{fmt.Sprintf("go run %s: no main package there", pkg)}
	}
	var msgs []string
	for _, a := range args[i+1:] {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := flagName(a)
		if name == "" || c.Flags[name] || strings.Contains(src, `"`+name+`"`) {
			continue
		}
		msgs = append(msgs, fmt.Sprintf("go run %s: it defines no flag -%s, nor is it a runsc flag", pkg, name))
	}
	return msgs
}

var testFuncRE = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)

// checkGoTest checks `go test [flags] [packages] [flags]`: each local
// package pattern names a directory, and -run, -bench and -fuzz patterns
// match a function there (-run is not checked beside -bench or -fuzz,
// where it is usually there to run no test).
func (c *Checker) checkGoTest(args []string, cwd string) []string {
	var pats []string
	pattern := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			if isLocal(a) {
				pats = append(pats, a)
			}
			continue
		}
		name, value, eq := flagName(a)
		if (testValueFlags[name] || buildValueFlags[name]) && !eq {
			if i+1 >= len(args) {
				continue // the flag named, not used: `go test -bench`
			}
			value = args[i+1]
			i++
		}
		if name == "run" || name == "bench" || name == "fuzz" {
			pattern[name] = value
		}
	}
	if len(pats) == 0 {
		pats = []string{"."}
	}
	var msgs []string
	dirs := make([]string, 0, len(pats))
	for _, p := range pats {
		d, err := c.dir(cwd, p)
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("go test %s: %v", p, err))
			continue
		}
		dirs = append(dirs, d)
	}
	if len(msgs) > 0 || len(pattern) == 0 {
		return msgs
	}
	var funcs []string
	for i, d := range dirs {
		for _, m := range testFuncRE.FindAllStringSubmatch(goSources(d, strings.HasSuffix(pats[i], "..."), true), -1) {
			funcs = append(funcs, m[1])
		}
	}
	check := func(flag string, prefixes ...string) {
		re, err := regexp.Compile(strings.Split(pattern[flag], "/")[0])
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("go test -%s %q: %v", flag, pattern[flag], err))
			return
		}
		for _, f := range funcs {
			for _, p := range prefixes {
				if strings.HasPrefix(f, p) && re.MatchString(f) {
					return
				}
			}
		}
		msgs = append(msgs, fmt.Sprintf("go test -%s %q: no function matches in %s", flag, pattern[flag], strings.Join(pats, " ")))
	}
	if _, ok := pattern["bench"]; ok {
		check("bench", "Benchmark")
	}
	if _, ok := pattern["fuzz"]; ok {
		check("fuzz", "Fuzz")
	}
	if _, ok := pattern["run"]; ok && pattern["bench"] == "" && pattern["fuzz"] == "" {
		check("run", "Test", "Fuzz", "Example")
	}
	return msgs
}

// goSources returns the text of the Go files in dir, and with recursive
// of the packages below it as ./... names them (no testdata, no _ or .
// directories, no other module); with tests, only the _test.go files,
// else only the others.
func goSources(dir string, recursive, tests bool) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && path != dir:
			n := d.Name()
			if !recursive || n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		case !d.IsDir() && strings.HasSuffix(path, ".go") && strings.HasSuffix(path, "_test.go") == tests:
			if t, err := os.ReadFile(path); err == nil {
				b.Write(t)
				b.WriteByte('\n')
			}
		}
		return nil
	})
	return b.String()
}
