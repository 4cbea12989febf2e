package gauss

import (
	"errors"
	"fmt"
	"strconv"
)

// ParseOptions checks every option against the widest rule either server
// has, since it runs before decant has connected. Once the reader knows
// which server it talks to, CheckServer applies that server's own rules,
// so a mistake is reported by decant, naming the server and where its
// rule lives, rather than by the server after copy-both mode has begun.

// openGaussOption is what openGauss's option parsers accept for one
// option in each mode; max is the upper bound of an integer (0: the
// bound ParseOptions applied).
type openGaussOption struct {
	serial, parallel bool
	max              int64
}

// openGaussOptions are the options openGauss's streaming parsers know:
// serial decoding's in src/gausskernel/storage/replication/logical/logical.cpp
// ParseDecodingOptionPlugin (mppdb_decoding's pg_decode_startup calls it for
// each option), parallel decoding's in .../logical/parallel_decode_worker.cpp
// ParseDecodingOption. Anything else, both raise `option "%s" = "%s" is
// unknown`. Names match whole (strncmp with sizeof, so the NUL counts):
// white-table-list1 … 9 are unknown. Both parsers take max-txn-in-memory
// (MB) and max-reorderbuffer-in-memory (GB) in 0..100 (their const maxTxn
// and maxReorderBuffer) and honour them (parallel_reorderbuffer.cpp
// serializes a transaction past either). force-binary only sets the
// output type, which only the SQL functions check (logicalfuncs.cpp); the
// parallel parser does not know it.
var openGaussOptions = map[string]openGaussOption{
	"include-xids":                {serial: true, parallel: true},
	"include-timestamp":           {serial: true, parallel: true},
	"skip-empty-xacts":            {serial: true, parallel: true},
	"only-local":                  {serial: true, parallel: true},
	"white-table-list":            {serial: true, parallel: true},
	"standby-connection":          {serial: true, parallel: true},
	"sender-timeout":              {serial: true, parallel: true},
	"include-originid":            {serial: true, parallel: true},
	"parallel-decode-num":         {serial: true, parallel: true},
	"max-txn-in-memory":           {serial: true, parallel: true, max: 100},
	"max-reorderbuffer-in-memory": {serial: true, parallel: true, max: 100},
	"force-binary":                {serial: true},
	"decode-style":                {parallel: true},
	"sending-batch":               {parallel: true},
	"parallel-queue-size":         {parallel: true},
}

// CheckServer refuses what the connected server would refuse: on
// openGauss, options its parsers do not know in this mode, integers past
// its bounds, and output-order 1 (openGauss has no CSN-ordered slots).
// GaussDB's rules are those ParseOptions applied (the seed document).
func (o Options) CheckServer(v ServerVersion) error {
	if v.Flavour != OpenGauss {
		return nil
	}
	mode, parser := "serial", "logical.cpp ParseDecodingOptionPlugin"
	if o.Parallel() {
		mode, parser = "parallel", "parallel_decode_worker.cpp ParseDecodingOption"
	}
	var errs []error
	for _, name := range o.names() {
		value := o.values[name]
		og, known := openGaussOptions[name]
		switch {
		case !known || (mode == "serial" && !og.serial) || (mode == "parallel" && !og.parallel):
			why := "it is GaussDB's; remove it"
			if name == "output-order" {
				why = "openGauss has no CSN-ordered slots; remove it"
			}
			errs = append(errs, optionError(name, value, fmt.Sprintf(
				"%s does not take this option in %s decoding (%s): %s", v, mode, parser, why)))
		case og.max != 0:
			if n, err := strconv.ParseInt(value, 10, 64); err == nil && n > og.max {
				errs = append(errs, optionError(name, value, fmt.Sprintf(
					"must be an integer from 0 to %d on %s (%s); the larger bound is GaussDB's", og.max, v, parser)))
			}
		}
	}
	return errors.Join(errs...)
}
