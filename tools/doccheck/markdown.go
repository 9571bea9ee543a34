package doccheck

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// page is what the checks need of one Markdown file.
type page struct {
	path    string
	anchors map[string]bool
	links   []ref
	spans   []ref // inline code spans, outside fenced blocks
	shell   []ref // lines of fenced sh blocks, continuations joined
}

// ref is a piece of text and the line it starts on.
type ref struct {
	text string
	line int
}

// shellInfo are the info strings of fenced blocks whose lines are
// commands.
var shellInfo = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

var (
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$`)
	linkRE    = regexp.MustCompile(`\[[^\]]*\]\(\s*([^)\s]+)(?:\s+"[^"]*")?\s*\)`)
	fenceRE   = regexp.MustCompile("^ {0,3}(```+|~~~+)[ \t]*([^ \t`]*)")
)

// parse reads a Markdown page: its headings' anchors, its links and code
// spans outside fenced blocks, and the lines of its sh blocks.
func parse(path, text string) *page {
	p := &page{path: path, anchors: make(map[string]bool)}
	lines := strings.Split(text, "\n")
	prose := make([]string, len(lines)) // the lines outside fenced blocks; blank inside
	slugs := make(map[string]int)
	var fence string // the open fence, "" outside one
	var inShell bool
	var cont strings.Builder // a shell line continued with a backslash
	contLine := 0
	for i, l := range lines {
		n := i + 1
		if fence != "" {
			t := strings.TrimSpace(l)
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
				continue
			}
			if !inShell {
				continue
			}
			if cont.Len() == 0 {
				contLine = n
			}
			if s, ok := strings.CutSuffix(strings.TrimRight(l, " \t"), `\`); ok {
				cont.WriteString(s)
				cont.WriteString(" ")
				continue
			}
			cont.WriteString(l)
			p.shell = append(p.shell, ref{cont.String(), contLine})
			cont.Reset()
			continue
		}
		if m := fenceRE.FindStringSubmatch(l); m != nil {
			fence, inShell = m[1], shellInfo[m[2]]
			continue
		}
		prose[i] = l
		if m := headingRE.FindStringSubmatch(l); m != nil {
			s := Slug(m[2])
			if k := slugs[s]; k > 0 {
				p.anchors[s+"-"+strconv.Itoa(k)] = true
			} else {
				p.anchors[s] = true
			}
			slugs[s]++
		}
	}
	if cont.Len() > 0 { // a block that ends in a continuation
		p.shell = append(p.shell, ref{cont.String(), contLine})
	}
	text, spans := blankCodeSpans(strings.Join(prose, "\n"))
	p.spans = spans
	for _, m := range linkRE.FindAllStringSubmatchIndex(text, -1) {
		p.links = append(p.links, ref{text[m[2]:m[3]], 1 + strings.Count(text[:m[0]], "\n")})
	}
	return p
}

// blankCodeSpans returns text with the contents of its inline code spans
// (`...`, “...“) replaced by spaces, newlines kept, and the spans.
func blankCodeSpans(text string) (string, []ref) {
	b := []byte(text)
	var spans []ref
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := run(b, i)
		open := i + n
		end := -1
		for j := open; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := run(b, j)
			if m == n {
				end = j
				break
			}
			j += m
		}
		if end < 0 { // no closing run: literal backticks
			i = open
			continue
		}
		code := strings.TrimSpace(strings.ReplaceAll(string(b[open:end]), "\n", " "))
		spans = append(spans, ref{code, 1 + strings.Count(string(b[:i]), "\n")})
		for j := open; j < end; j++ {
			if b[j] != '\n' {
				b[j] = ' '
			}
		}
		i = end + n
	}
	return string(b), spans
}

// run returns the length of the run of backticks at b[i].
func run(b []byte, i int) int {
	n := 0
	for i+n < len(b) && b[i+n] == '`' {
		n++
	}
	return n
}

// Slug is the anchor GitHub gives a heading: its text without Markdown
// (code backticks, link targets, emphasis), lower case, with every
// character that is not a letter, digit, mark, connector, space or hyphen
// dropped, and spaces made hyphens.
func Slug(heading string) string {
	heading = linkRE.ReplaceAllStringFunc(heading, func(l string) string {
		return l[1:strings.Index(l, "](")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-', unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsNumber(r),
			unicode.IsMark(r), unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
