package doccheck

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// schemeRE matches a link with a scheme (https:, mailto:): not ours to
// check.
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// checkLinks checks that each relative link of p names a file or
// directory in the repository and, with a #anchor, a heading of a .md
// page.
func (c *Checker) checkLinks(p *page) []Problem {
	var probs []Problem
	for _, l := range p.links {
		if msg := c.checkLink(p, l.text); msg != "" {
			probs = append(probs, Problem{File: p.path, Line: l.line, Msg: fmt.Sprintf("link %s: %s", l.text, msg)})
		}
	}
	return probs
}

// checkLink returns what is wrong with the link target (relative to p's
// directory), or "".
func (c *Checker) checkLink(p *page, target string) string {
	if schemeRE.MatchString(target) || strings.HasPrefix(target, "//") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	if f, err := url.PathUnescape(file); err == nil {
		file = f
	}
	rel := p.path
	if file != "" {
		if strings.HasPrefix(file, "/") {
			return "an absolute path; link relative to the page"
		}
		rel = filepath.Clean(filepath.Join(filepath.Dir(p.path), file))
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return "outside the repository"
		}
		st, err := os.Stat(filepath.Join(c.Root, rel))
		if err != nil {
			return "no such file or directory"
		}
		if anchor != "" && st.IsDir() {
			return "an anchor on a directory"
		}
	}
	if anchor == "" {
		return ""
	}
	if filepath.Ext(rel) != ".md" {
		return "an anchor on a file that is not Markdown"
	}
	dest, err := c.page(rel)
	if err != nil {
		return err.Error()
	}
	if !dest.anchors[anchor] {
		return fmt.Sprintf("%s has no heading whose anchor is #%s", rel, anchor)
	}
	return ""
}
