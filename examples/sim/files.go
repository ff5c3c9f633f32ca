package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"sync"
)

// memFiles is a set of files held in memory: what the browser's page
// hands the command (a dropped recording) and what the command writes for
// it (the chart). Safe for concurrent use.
type memFiles struct {
	mu    sync.Mutex // guards files
	files map[string][]byte
}

func newMemFiles() *memFiles { return &memFiles{files: map[string][]byte{}} }

// ReadFile returns a copy of the file called name.
func (m *memFiles) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[name]
	if !ok {
		return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
	}
	return bytes.Clone(b), nil
}

// Create starts the file called name anew; it is stored when closed.
func (m *memFiles) Create(name string) (io.WriteCloser, error) {
	return &memFile{m: m, name: name}, nil
}

// put stores data as the file called name.
func (m *memFiles) put(name string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[name] = bytes.Clone(data)
}

type memFile struct {
	bytes.Buffer
	m    *memFiles
	name string
}

func (f *memFile) Close() error {
	f.m.put(f.name, f.Bytes())
	return nil
}
