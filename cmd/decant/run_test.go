package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestCPUProfile(t *testing.T) {
	stop, err := startCPUProfile("")
	if err != nil || stop() != nil {
		t.Fatalf("no --cpuprofile: %v", err)
	}

	path := filepath.Join(t.TempDir(), "cpu.pprof")
	stop, err = startCPUProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A pprof profile is a gzipped protocol buffer.
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		t.Errorf("profile written is not gzip data: % x", data[:min(len(data), 8)])
	}

	if _, err := startCPUProfile(filepath.Join(t.TempDir(), "missing", "cpu.pprof")); err == nil {
		t.Error("a profile in a missing directory was accepted")
	}
}
