package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/decant/decant/source/gauss"
)

func decodeCmd() *cobra.Command {
	var format, configFile string
	var batch, hexInput bool
	cmd := &cobra.Command{
		Use:   "decode --format gauss-b|gauss-j|gauss-t|mppdb [--batch] [--hex] FILE|-",
		Short: "Decode captured GaussDB/openGauss logical decoding payloads to JSON lines",
		Long: `Reads captured XLogData payloads (each preceded by its length as a 4-byte
big-endian integer, or with --hex one hex-encoded payload per line; - reads
stdin) and prints one JSON object per decoded record. Malformed input stops
with the byte offset and what was expected there.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("decode takes one FILE argument (- for standard input)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := settle(cmd); err != nil {
				return err
			}
			f, err := gauss.ParseFormat(format, batch)
			if err != nil {
				return usageError{err}
			}
			in := os.Stdin
			if args[0] != "-" {
				if in, err = os.Open(args[0]); err != nil {
					return usagef("%v", err)
				}
				defer in.Close()
			}
			out := bufio.NewWriter(os.Stdout)
			defer out.Flush()
			emit := func(payload []byte, offset int64, what string) error {
				recs, err := gauss.Decode(f, payload, 0)
				var de *gauss.DecodeError
				if errors.As(err, &de) {
					return fmt.Errorf("%s at byte %d: expected %s", what, offset+int64(de.Offset), de.Expected)
				}
				if err != nil {
					return fmt.Errorf("%s at byte %d: %w", what, offset, err)
				}
				enc := json.NewEncoder(out)
				enc.SetEscapeHTML(false)
				for _, r := range recs {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				return nil
			}
			if hexInput {
				return decodeHexLines(in, emit)
			}
			return decodeFramed(in, emit)
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "payload format: gauss-b (parallel binary), gauss-j (parallel JSON), gauss-t (parallel text), mppdb (serial)")
	cmd.Flags().BoolVar(&batch, "batch", false, "payloads use batch framing (sending-batch=1)")
	cmd.Flags().BoolVar(&hexInput, "hex", false, "input is one hex payload per line")
	addConfigFlag(cmd, &configFile)
	return cmd
}

// decodeFramed reads length-prefixed payloads; offsets are in the file.
func decodeFramed(r io.Reader, emit func([]byte, int64, string) error) error {
	br := bufio.NewReader(r)
	var off int64
	for n := 1; ; n++ {
		var hdr [4]byte
		k, err := io.ReadFull(br, hdr[:])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("payload %d at byte %d: expected a 4-byte length, found %d bytes", n, off, k)
		}
		size := binary.BigEndian.Uint32(hdr[:])
		// Read what is there rather than trusting the length with an
		// allocation: a corrupt length must not exhaust memory.
		var buf bytes.Buffer
		if _, err := io.CopyN(&buf, br, int64(size)); err != nil {
			return fmt.Errorf("payload %d at byte %d: expected %d bytes, found %d", n, off+4, size, buf.Len())
		}
		payload := buf.Bytes()
		if err := emit(payload, off+4, fmt.Sprintf("payload %d", n)); err != nil {
			return err
		}
		off += 4 + int64(size)
	}
}

// decodeHexLines reads one hex payload per line; offsets are in the
// decoded payload of that line.
func decodeHexLines(r io.Reader, emit func([]byte, int64, string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		payload, err := hex.DecodeString(strings.ReplaceAll(text, " ", ""))
		if err != nil {
			return fmt.Errorf("line %d: not hex: %v", line, err)
		}
		if err := emit(payload, 0, fmt.Sprintf("line %d", line)); err != nil {
			return err
		}
	}
	return sc.Err()
}
