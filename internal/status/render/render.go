// Package render draws the tables polykube-status prints (the fleet report and the offline
// plan) and writes its JSON and YAML: one look for every view.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
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
// the alignment; trailing empty cells are dropped. color adds the cells' colours.
func Table(w io.Writer, rows [][]Cell, color bool) error {
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

// YAML writes v as YAML.
func YAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode YAML: %w", err)
	}
	_, err = w.Write(b)
	return err
}
