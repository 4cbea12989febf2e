package harness

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
)

// BuildDecant builds the decant command into dir and returns its path, so
// that tests, the demo and the benchmark drive the real binary.
func BuildDecant(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "decant")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/decant/decant/cmd/decant").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("harness: go build decant: %v\n%s", err, out)
	}
	return bin, nil
}
