package gauss

import (
	"strings"
	"testing"
)

func TestParseServerVersion(t *testing.T) {
	for _, c := range []struct {
		in   string
		want ServerVersion
	}{
		// configure's PG_VERSION_STR for a single-node openGauss build.
		{"(openGauss 7.0.0-RC2 build 1f1f1f1f) compiled at 2100-00-00 00:00:00 commit 9999 last mr 9999 debug on x86_64-unknown-linux-gnu, compiled by g++ (GCC) 10.3.0, 64-bit",
			ServerVersion{OpenGauss, "7.0.0-RC2"}},
		{"(openGauss 5.0.0 build a07d57c3) compiled at 2023-03-29 03:37:13 commit 0 last mr   on aarch64-unknown-linux-gnu, compiled by g++ (GCC) 7.3.0, 64-bit",
			ServerVersion{OpenGauss, "5.0.0"}},
		// lite mode appends -lite to the product (buildfunction.sh).
		{"(openGauss-lite 6.0.0 build 5a2ae2c4) compiled at 2024-09-29 on x86_64-unknown-linux-gnu, compiled by g++ (GCC) 10.3.0, 64-bit",
			ServerVersion{OpenGauss, "6.0.0"}},
		// multi-node builds put the product and version in front.
		{"openGauss 3.0.0 (openGauss 3.0.0 build 02c14696) compiled at 2022-04-01 on x86_64-unknown-linux-gnu, compiled by g++ (GCC) 7.3.0, 64-bit",
			ServerVersion{OpenGauss, "3.0.0"}},
		{"gaussdb (GaussDB Kernel 505.1.0 build 8ac3f9b2) compiled at 2024-09-20 on x86_64-unknown-linux-gnu, compiled by g++ (GCC) 10.3.0, 64-bit",
			ServerVersion{GaussDB, "505.1.0"}},
		{"PostgreSQL 9.2.4 (GaussDB Kernel V500R001C20 build ) compiled at 2021-03-09 18:30:51 commit 0 last mr  on x86_64-unknown-linux-gnu",
			ServerVersion{GaussDB, "V500R001C20"}},
	} {
		got, err := ParseServerVersion(c.in)
		if err != nil || got != c.want {
			t.Errorf("%q: got %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	_, err := ParseServerVersion("PostgreSQL 15.6 on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit")
	if err == nil || !strings.Contains(err.Error(), "neither openGauss nor GaussDB Kernel") {
		t.Errorf("PostgreSQL: %v", err)
	}
}

func TestCheckServer(t *testing.T) {
	og := ServerVersion{OpenGauss, "7.0.0"}
	gs := ServerVersion{GaussDB, "505.1.0"}
	par := func(m map[string]string) map[string]string { m["parallel-decode-num"] = "4"; return m }
	for _, c := range []struct {
		opts map[string]string
		v    ServerVersion
		want string // "" = accepted
	}{
		{map[string]string{}, og, ""},
		{par(map[string]string{"decode-style": "j", "sending-batch": "1"}), og, ""},
		{par(map[string]string{"max-txn-in-memory": "100", "max-reorderbuffer-in-memory": "100"}), og, ""},
		{par(map[string]string{"max-txn-in-memory": "101"}), og, `max-txn-in-memory = "101": must be an integer from 0 to 100 on openGauss 7.0.0 (parallel_decode_worker.cpp ParseDecodingOption)`},
		{par(map[string]string{"max-txn-in-memory": "101"}), gs, ""},
		{par(map[string]string{"max-reorderbuffer-in-memory": "500"}), og, "from 0 to 100 on openGauss"},
		{map[string]string{"force-binary": "true"}, og, ""},
		{map[string]string{"include-originid": "true"}, og, ""},
		{map[string]string{"enable-heartbeat": "true"}, og, "does not take this option in serial decoding (logical.cpp ParseDecodingOptionPlugin): it is GaussDB's"},
		{par(map[string]string{"enable-decode-position": "true"}), og, "in parallel decoding"},
		{map[string]string{"output-order": "1", "parallel-decode-num": "2"}, og, "no CSN-ordered slots"},
		{map[string]string{"output-order": "1", "parallel-decode-num": "2"}, gs, ""},
		{map[string]string{"white-table-list1": "public.t"}, og, "white-table-list1"},
	} {
		o, err := ParseOptions(c.opts, "")
		if err != nil {
			t.Fatalf("%v: %v", c.opts, err)
		}
		err = o.CheckServer(c.v)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v on %v: %v", c.opts, c.v, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v on %v: %v, want %q", c.opts, c.v, err, c.want)
		}
	}
}
