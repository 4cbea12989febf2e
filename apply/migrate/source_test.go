package migrate

import (
	"context"
	"strings"
	"testing"
)

// A workflow whose caller did not wire in the source says so, before it
// connects anywhere, instead of panicking.
func TestSourceNotWired(t *testing.T) {
	ctx := context.Background()
	cfg := Config{Source: "postgres://127.0.0.1:1/db", Target: "postgres://127.0.0.1:1/db", Pipeline: "p"}
	check := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error naming %s", what, err, want)
		}
	}
	_, err := Drop(ctx, cfg)
	check("Drop", err, "Config.OpenSource")
	_, err = Verify(ctx, cfg, DefaultVerifyOptions())
	check("Verify", err, "Config.OpenSource")
	_, err = ReadStatusGauss(ctx, cfg)
	check("ReadStatusGauss", err, "Config.OpenGauss")
	_, err = DropGauss(ctx, cfg)
	check("DropGauss", err, "Config.OpenGauss")
	_, err = InitGauss(ctx, cfg, InitOptions{})
	check("InitGauss", err, "Config.Gauss")
}
