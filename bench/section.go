package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// maxWidth is the widest a table's line may be; a section wider than that
// is printed as two or more tables, each repeating the columns that say
// whose the row is.
const maxWidth = 120

// section is one scenario's table: a title, two header rows and the rows,
// each cell followed by a tab; the first keys columns say whose a row is.
type section struct {
	title        string
	keys         int
	head1, head2 string
	rows         []tableRow
}

// tableRow is one row of a section: its cells, its lock, who it is, and
// its errors: how many, and the first.
type tableRow struct {
	cells, lock, who string
	errs             int64
	err              string
}

// add appends a row for lock, its cells formatted by format and args.
func (t *section) add(lock, who string, errs int64, err, format string, args ...any) {
	t.rows = append(t.rows, tableRow{cells: fmt.Sprintf(format, args...), lock: lock, who: who, errs: errs, err: err})
}

// print prints the section, if it has rows, after a blank line: its cells
// right-aligned, in one table, or in several when one would be wider than
// maxWidth; then a line for each row that had errors. It marks each row's
// lock in ran.
func (t *section) print(out io.Writer, ran map[string]bool) error {
	if len(t.rows) == 0 {
		return nil
	}
	lines := [][]string{split(t.head1), split(t.head2)}
	for _, r := range t.rows {
		lines = append(lines, split(r.cells))
		ran[r.lock] = true
	}
	widths := make([]int, len(lines[1]))
	for _, l := range lines {
		for i, c := range l {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n", wrap(t.title))
	for p, cols := range parts(widths, t.keys) {
		if p > 0 {
			b.WriteString("\n")
		}
		for _, l := range lines {
			var line strings.Builder
			for _, i := range cols {
				fmt.Fprintf(&line, "  %*s", widths[i], l[i])
			}
			b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
		}
	}
	for _, r := range t.rows {
		if r.errs > 0 {
			fmt.Fprintf(&b, "  %s: %s, the first: %s\n", r.who, plural(int(r.errs), "error", "errors"), r.err)
		}
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// wrap breaks each line of text between words so that it fits maxWidth,
// indenting the lines it adds by two spaces.
func wrap(text string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		cur := indent
		for _, word := range strings.Fields(line) {
			switch {
			case cur == indent:
				cur += word
			case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(word) <= maxWidth:
				cur += " " + word
			default:
				out = append(out, cur)
				cur = indent + "  " + word
			}
		}
		out = append(out, cur)
	}
	return strings.Join(out, "\n")
}

// split returns the cells of a tab-terminated line.
func split(line string) []string {
	return strings.Split(strings.TrimSuffix(line, "\t"), "\t")
}

// parts groups the columns of the given widths, each printed two spaces
// after the one before, into as few tables at most maxWidth wide as it
// can, of about the same width: each begins with the first keys columns,
// then takes the next columns in order (at least one, however wide).
func parts(widths []int, keys int) [][]int {
	base, rest := 0, 0
	for i, w := range widths {
		if i < keys {
			base += w + 2
		} else {
			rest += w + 2
		}
	}
	out := pack(widths, keys, base, maxWidth)
	n := len(out)
	for limit := base + (rest+n-1)/n; limit < maxWidth; limit++ {
		if p := pack(widths, keys, base, limit); len(p) == n {
			return p
		}
	}
	return out
}

// pack groups the columns as parts does, each table at most limit wide,
// filling each before the next.
func pack(widths []int, keys, base, limit int) [][]int {
	var out [][]int
	for i := keys; i < len(widths) || out == nil; {
		cols, w := make([]int, 0, len(widths)), base
		for k := range keys {
			cols = append(cols, k)
		}
		for ; i < len(widths) && (len(cols) == keys || w+widths[i]+2 <= limit); i++ {
			cols = append(cols, i)
			w += widths[i] + 2
		}
		out = append(out, cols)
	}
	return out
}
