package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

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
big-endian integer; or with --hex as text: one hex payload per line, or
hexdump -C or xxd output, whose offsets starting again from 0 begin the
next payload; '#' lines are comments; - reads stdin) and prints one JSON object per decoded record. Malformed input stops
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
	cmd.Flags().BoolVar(&hexInput, "hex", false, "input is text: one hex payload per line, or hexdump -C / xxd output")
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

// decodeHexLines reads payloads written as text (gauss.ParseHexDump:
// plain hex lines, hexdump -C, xxd); offsets are in each payload.
func decodeHexLines(r io.Reader, emit func([]byte, int64, string) error) error {
	payloads, err := gauss.ParseHexDump(r)
	if err != nil {
		return fmt.Errorf("--hex input: %w", err)
	}
	for i, p := range payloads {
		if err := emit(p, 0, fmt.Sprintf("payload %d", i+1)); err != nil {
			return err
		}
	}
	return nil
}
