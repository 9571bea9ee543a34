package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// checkCommands checks the commands of p's sh blocks, and the inline code
// spans that are a command (go run, go test, a script, runsc), a runsc
// flag or a path in the repository.
func (c *Checker) checkCommands(p *page) []Problem {
	var probs []Problem
	add := func(line int, msgs []string) {
		for _, m := range msgs {
			probs = append(probs, Problem{File: p.path, Line: line, Msg: m})
		}
	}
	for _, l := range p.shell {
		add(l.line, c.checkLine(l.text))
	}
	for _, s := range p.spans {
		switch {
		case isCommand(s.text):
			add(s.line, c.checkLine(s.text))
		case isRepoPath(s.text):
			if m := c.checkPath(s.text); m != "" {
				add(s.line, []string{m})
			}
		default:
			var msgs []string
			for _, w := range strings.Fields(s.text) {
				if m := c.checkFlag(w); m != "" {
					msgs = append(msgs, m)
				}
			}
			add(s.line, msgs)
		}
	}
	return probs
}

// isCommand says whether an inline code span reads as a command to run.
func isCommand(s string) bool {
	w := strings.Fields(s)
	if len(w) > 0 && w[0] == "sudo" {
		w = w[1:]
	}
	switch {
	case len(w) == 0:
		return false
	case w[0] == "go":
		return len(w) > 2 && (w[1] == "run" || w[1] == "test")
	case w[0] == "runsc":
		return len(w) > 1
	}
	return strings.HasSuffix(w[0], ".sh") && strings.Contains(w[0], "/") && !filepath.IsAbs(w[0])
}

// repoPathRE matches an inline path into the repository. runsc/ is left
// out: the docs also name files of gVisor's runsc tree that way.
var repoPathRE = regexp.MustCompile(`^(\.ci|benchmarks|cri|docs|e2e|lab|pkg|runsc-flags|tools)/\S*$`)

// generated are the prefixes of paths that builds make, not in the
// repository (.gitignore's).
var generated = []string{"cri/bin/", "cri/.build/"}

func isRepoPath(s string) bool { return repoPathRE.MatchString(s) }

// checkPath checks that the path (or glob) s, relative to the root, names
// something.
func (c *Checker) checkPath(s string) string {
	for _, g := range generated {
		if strings.HasPrefix(s, g) {
			return ""
		}
	}
	m, err := filepath.Glob(filepath.Join(c.Root, s))
	if err != nil || len(m) == 0 {
		return fmt.Sprintf("%s: no such file or directory", s)
	}
	return ""
}

// checkFlag checks a word that names a runsc flag (--qdisc..., or a
// dev.gvisor.flag.qdisc... annotation): it must be in the table. Globs
// (--qdisc-ingress-*) are not checked.
func (c *Checker) checkFlag(word string) string {
	w := strings.Trim(word, "\"',;:()[]{}")
	var name string
	const annotation = "dev.gvisor.flag."
	switch {
	case strings.Contains(w, annotation):
		name = w[strings.Index(w, annotation)+len(annotation):]
		if !strings.HasPrefix(name, "qdisc") {
			return ""
		}
	case strings.HasPrefix(w, "--qdisc"), strings.HasPrefix(w, "--allow-flag-override"):
		name = w[2:]
	default:
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	if strings.Contains(name, "*") || c.Flags[name] {
		return ""
	}
	return fmt.Sprintf("--%s is not a flag in runsc-flags' table", name)
}

// token is a shell word, or an operator (&&, ||, ;, |, &, a redirection).
type token struct {
	s  string
	op bool
}

// words splits a shell line into tokens, as sh would, well enough for
// docs: quotes, comments, operators and redirections.
func words(line string) []token {
	var toks []token
	var w strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			toks = append(toks, token{s: w.String()})
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\'' || ch == '"':
			j := strings.IndexByte(line[i+1:], ch)
			if j < 0 {
				j = len(line) - i - 1
			}
			w.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case ch == '\\' && i+1 < len(line):
			w.WriteByte(line[i+1])
			inWord = true
			i++
		case ch == ' ' || ch == '\t':
			flush()
		case ch == '#' && !inWord:
			flush()
			return toks
		case strings.IndexByte("&|;<>", ch) >= 0:
			// 2>&1 and the like: a redirection, not a word.
			if ch == '>' && inWord && isDigits(w.String()) {
				w.Reset()
				inWord = false
			}
			flush()
			j := i
			for j < len(line) && strings.IndexByte("&|;<>", line[j]) >= 0 {
				j++
			}
			op := line[i:j]
			if strings.HasSuffix(op, ">&") && j < len(line) && line[j] >= '0' && line[j] <= '9' {
				j++ // >&1
				op = line[i:j]
			}
			toks = append(toks, token{s: op, op: true})
			i = j - 1
		default:
			w.WriteByte(ch)
			inWord = true
		}
	}
	flush()
	return toks
}

func isDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// checkLine checks the commands of one shell line, run from the root.
func (c *Checker) checkLine(line string) []string {
	var msgs []string
	cwd := "."
	var cmd []string
	redirect := false
	end := func() {
		msgs = append(msgs, c.checkCommand(cmd, &cwd)...)
		cmd = cmd[:0]
	}
	for _, t := range words(line) {
		switch {
		case t.op && strings.ContainsAny(t.s, "<>"):
			redirect = !strings.Contains(t.s, "&") // the next word is a file, unless it is >&1
		case t.op:
			end()
		case redirect:
			redirect = false
		default:
			cmd = append(cmd, t.s)
		}
	}
	end()
	return msgs
}

// checkCommand checks one simple command; cd moves cwd for the commands
// after it on the line.
func (c *Checker) checkCommand(cmd []string, cwd *string) []string {
	for len(cmd) > 0 && (cmd[0] == "sudo" || cmd[0] == "env" || (strings.Contains(cmd[0], "=") && !strings.HasPrefix(cmd[0], "-")) || (strings.HasPrefix(cmd[0], "-") && len(cmd) > 1)) {
		cmd = cmd[1:] // sudo -E, env, VAR=value
	}
	if len(cmd) == 0 {
		return nil
	}
	var msgs []string
	for _, w := range cmd {
		if m := c.checkFlag(w); m != "" {
			msgs = append(msgs, m)
		}
	}
	name := cmd[0]
	switch {
	case name == "cd":
		if len(cmd) > 1 {
			d := filepath.Join(*cwd, cmd[1])
			if st, err := os.Stat(filepath.Join(c.Root, d)); err != nil || !st.IsDir() {
				msgs = append(msgs, fmt.Sprintf("cd %s: no such directory", cmd[1]))
			}
			*cwd = d
		}
	case name == "go":
		msgs = append(msgs, c.checkGo(cmd[1:], *cwd)...)
	case strings.Contains(name, "/"):
		if filepath.IsAbs(name) {
			break
		}
		st, err := os.Stat(filepath.Join(c.Root, *cwd, name))
		switch {
		case err != nil:
			msgs = append(msgs, fmt.Sprintf("%s: no such file in the repository", name))
		case st.IsDir():
			msgs = append(msgs, fmt.Sprintf("%s: a directory, not a command", name))
		case st.Mode()&0o111 == 0:
			msgs = append(msgs, fmt.Sprintf("%s: not executable", name))
		}
	case !c.tools()[name]:
		msgs = append(msgs, fmt.Sprintf("%s: neither a file in the repository nor a known tool (doccheck.DefaultTools)", name))
	}
	return msgs
}
