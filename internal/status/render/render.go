// Package render draws the tables polykube-status prints (the fleet report and the offline
// plan) and writes its JSON and YAML: one look for every view.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// ANSI colours of cells.
const (
	None   = ""
	Green  = "\x1b[32m"
	Yellow = "\x1b[33m"
	Red    = "\x1b[31m"
	Bold   = "\x1b[1m"
	reset  = "\x1b[0m"
)

// c1Controls matches the C1 control characters in UTF-8.
var c1Controls = regexp.MustCompile("[\u0080-\u009f]")

// Cell is one table cell: its text and the colour it has on a terminal.
type Cell struct {
	Text  string
	Color string
}

// Text is an uncoloured cell.
func Text(text string) Cell { return Cell{Text: text} }

// Colored is a cell of a colour.
func Colored(text, color string) Cell { return Cell{Text: text, Color: color} }

// Header is a row of bold cells.
func Header(names ...string) []Cell {
	out := make([]Cell, len(names))
	for i, v := range names {
		out[i] = Cell{Text: v, Color: Bold}
	}
	return out
}

// Table writes rows as aligned columns. It pads on visible width, so colour codes never break
// the alignment; trailing empty cells are dropped. color adds the cells' colours. Control
// characters in the cells' text are escaped (Escape): much of it comes from the clusters.
func Table(w io.Writer, rows [][]Cell, color bool) error {
	escaped := make([][]Cell, len(rows))
	for i, r := range rows {
		escaped[i] = make([]Cell, len(r))
		for j, x := range r {
			escaped[i][j] = Cell{Text: Escape(x.Text), Color: x.Color}
		}
	}
	rows = escaped
	widths := []int{}
	for _, r := range rows {
		for i, x := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			if n := utf8.RuneCountInString(x.Text); n > widths[i] {
				widths[i] = n
			}
		}
	}
	var b strings.Builder
	for _, r := range rows {
		last := len(r) - 1
		for last > 0 && r[last].Text == "" {
			last--
		}
		r = r[:last+1]
		for i, x := range r {
			text := x.Text
			if color && x.Color != None {
				text = x.Color + text + reset
			}
			b.WriteString(text)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(x.Text)+2))
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JSON writes v as indented JSON.
func JSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// YAML writes v as YAML. The YAML encoder refuses C1 control characters (U+0080..U+009F), which
// a condition message in a cluster may hold, so they are written as the text \u0080..\u009f:
// a report is still printed, and such a character shows as what it is.
func YAML(w io.Writer, v any) error {
	j, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode YAML: %w", err)
	}
	b, err := yaml.JSONToYAML(c1Controls.ReplaceAllFunc(j, func(c []byte) []byte {
		r, _ := utf8.DecodeRune(c)
		return fmt.Appendf(nil, `\\u%04x`, r)
	}))
	if err != nil {
		return fmt.Errorf("encode YAML: %w", err)
	}
	_, err = w.Write(b)
	return err
}

// Escape makes text safe to print on a terminal. Condition messages, names and the like are
// written by whoever can write to a cluster; printed raw, an escape sequence among them would
// drive the reader's terminal (set its title, clear or rewrite the screen, hide lines), and a
// carriage return, newline or bidirectional override would make a line show something other
// than what it says. Such characters, and bytes that are not UTF-8, are shown as Go escapes
// (\x1b, \n, \u202e, \x9b) instead.
func Escape(text string) string {
	if utf8.ValidString(text) && !strings.ContainsFunc(text, unsafeRune) {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		raw := text[i : i+size]
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, raw[0])
		case !unsafeRune(r):
			b.WriteString(raw)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// unsafeRune is a control character (C0, DEL, C1) or a bidirectional control.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}
