//go:build js && wasm

package main

import (
	"bytes"
	"syscall/js"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
)

// start hands the command to the page (web/index.html) as two functions,
// then waits for ever, as a WebAssembly program that serves its page does:
//
//	wardpoolSim(args, files)  runs the command with args (an array of
//	                          strings) over files (an object of name to
//	                          Uint8Array, such as a dropped recording) and
//	                          returns {out, error, files}: what it printed,
//	                          its error ("" for none) and the files it
//	                          wrote, as strings (the chart's SVG).
//	wardpoolScenario(name)    the settings of a built-in scenario, as the
//	                          flags' values ({} for an unknown name).
//
// The command is the one the command line runs (command in main.go): the
// same arguments print the same report, byte for byte.
func start() {
	js.Global().Set("wardpoolSim", js.FuncOf(simJS))
	js.Global().Set("wardpoolScenario", js.FuncOf(scenarioJS))
	if ready := js.Global().Get("wardpoolReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {}
}

func simJS(_ js.Value, argv []js.Value) any {
	var args []string
	if len(argv) > 0 {
		for i := range argv[0].Length() {
			args = append(args, argv[0].Index(i).String())
		}
	}
	m := newMemFiles()
	given := map[string]bool{}
	if len(argv) > 1 && argv[1].Type() == js.TypeObject {
		keys := js.Global().Get("Object").Call("keys", argv[1])
		for i := range keys.Length() {
			name := keys.Index(i).String()
			v := argv[1].Get(name)
			b := make([]byte, v.Get("length").Int())
			js.CopyBytesToGo(b, v)
			m.put(name, b)
			given[name] = true
		}
	}
	var out bytes.Buffer
	errText := ""
	if err := command(m, args, &out); err != nil {
		errText = err.Error()
	}
	written := map[string]any{}
	m.mu.Lock()
	for name, b := range m.files {
		if !given[name] {
			written[name] = string(b)
		}
	}
	m.mu.Unlock()
	return map[string]any{"out": out.String(), "error": errText, "files": written}
}

func scenarioJS(_ js.Value, argv []js.Value) any {
	if len(argv) == 0 {
		return map[string]any{}
	}
	s, ok := engine.Builtin(argv[0].String())
	if !ok {
		return map[string]any{}
	}
	return settingsOf(s)
}
