package trace_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/wardpool/wardpool/conformance/internal/trace"
)

// A trace written by hand, replayed against the pool: the most recently
// given back resource goes out first, the ceiling refuses, and a resource
// past its life is closed and another made.
func ExampleReplay() {
	const steps = `
trace example
size 2
age life 10000
compare sqlalchemy
take 1
take 2 at 3000
take 3          # past the ceiling
give 1 at 4000
give 2 at 5000
take 1          # the last given back
take 2 at 10001 # 1 is past its life
end
`
	traces, err := trace.ParseSteps(strings.NewReader(steps), "example.steps")
	if err != nil {
		fmt.Println(err)
		return
	}
	rec, err := trace.Replay(traces[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	rec.Ran = "wardpool"
	if err := trace.WriteRecording(os.Stdout, []trace.Recording{rec}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// trace example
	// ran wardpool
	// size 2
	// age life 10000
	// take 1 at 0 => got 1 idle 0 live 1
	// take 2 at 3000 => got 2 idle 0 live 2
	// take 3 at 3000 => refused idle 0 live 2
	// give 1 at 4000 => idle 1 live 2
	// give 2 at 5000 => idle 2 live 2
	// take 1 at 5000 => got 2 idle 1 live 2
	// take 2 at 10001 => closed 1 got 3 idle 0 live 2
	// end
}
