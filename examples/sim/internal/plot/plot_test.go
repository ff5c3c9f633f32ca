package plot

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

func TestNiceAndTick(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0.3, 0.5}, {1, 1}, {1.2, 2}, {3, 5}, {7, 10}, {45, 50}, {0, 1}, {-2, 1},
	} {
		if got := nice(c.in); got != c.want {
			t.Errorf("nice(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	for in, want := range map[float64]string{0: "0", 5: "5", 1000: "1000", 2.5: "2.5", 0.125: "0.125", 1e-12: "0"} {
		if got := tick(in); got != want {
			t.Errorf("tick(%v) = %q, want %q", in, got, want)
		}
	}
}

func figure() *Figure {
	p := Panel{Title: "a <panel> & more", Unit: "ms", Series: []Series{
		{Name: "one", Color: "#000", Values: []float64{0, 1, 2.5, 1000}},
		{Name: "two", Color: "#f00", Dash: true, Values: []float64{3, 2, 1, 0}},
	}}
	p.Rule.Y, p.Rule.Label = 4, "ceiling"
	lg := p
	lg.Log = true
	return &Figure{
		Title: "t", Text: []string{`"quoted"`}, X0: 1, Step: 1, XLabel: "s",
		Columns: []Column{
			{Title: "A", Panels: []Panel{p, lg}, Bands: []Band{{From: 2, To: 3, Label: "band", Color: "#ccc"}}},
			{Title: "B", Panels: []Panel{{Title: "empty"}}},
		},
		Footer: []string{"done"},
	}
}

func TestSVGIsWellFormedAndCarriesItsNumbers(t *testing.T) {
	var a, b bytes.Buffer
	if err := figure().WriteSVG(&a); err != nil {
		t.Fatal(err)
	}
	figure().WriteSVG(&b)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("one figure, two SVGs")
	}
	var doc struct {
		Lines []struct {
			Series string `xml:"data-series,attr"`
			Values string `xml:"data-values,attr"`
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
		Texts []string `xml:"text"`
	}
	if err := xml.Unmarshal(a.Bytes(), &doc); err != nil {
		t.Fatalf("not well-formed: %v", err)
	}
	if len(doc.Lines) != 4 || doc.Lines[0].Values != "0 1 2.5 1000" || doc.Lines[1].Values != "3 2 1 0" {
		t.Fatalf("lines %+v", doc.Lines)
	}
	if n := len(strings.Fields(doc.Lines[0].Points)); n != 4 {
		t.Fatalf("%d points for 4 values", n)
	}
	joined := strings.Join(doc.Texts, "|")
	for _, want := range []string{"a <panel> & more", `"quoted"`, "ceiling", "band", "ms (log)", "1000", "done"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no text %q in %s", want, joined)
		}
	}
}
