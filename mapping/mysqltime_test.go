package mapping

import "testing"

const datetimeRange = "is outside DATETIME's range 1000-01-01..9999-12-31"

func TestDateEdges(t *testing.T) {
	date := col(oidDate, -1)
	const outside = "date is outside DATE's range 1000-01-01..9999-12-31"
	runEdges(t, []edge{
		{"leap day", date, "date", "2024-02-29", "", "2024-02-29"},
		{"first", date, "date", "1000-01-01", "", "1000-01-01"},
		{"last", date, "date", "9999-12-31", "", "9999-12-31"},
		{"BC", date, "date", "4713-01-01 BC", outside, "1000-01-01"},
		{"before 1000", date, "date", "0999-12-31", outside, "1000-01-01"},
		{"after 9999", date, "date", "10000-01-01", outside, "9999-12-31"},
		{"infinity", date, "date", "infinity", "date infinity is outside DATE's range 1000-01-01..9999-12-31", "9999-12-31"},
		{"-infinity", date, "date", "-infinity", "date -infinity is outside DATE's range 1000-01-01..9999-12-31", "1000-01-01"},
		{"into DATETIME", date, "datetime(6)", "2024-02-29", "", "2024-02-29 00:00:00"},
		{"into TIMESTAMP, before its first second", date, "timestamp", "1969-12-31",
			"date is outside TIMESTAMP's range 1970-01-01 00:00:01..2038-01-19 03:14:07 UTC", "1970-01-01 00:00:01"},
	})
}

func TestTimestampEdges(t *testing.T) {
	ts := col(oidTimestamp, -1)
	runEdges(t, []edge{
		{"microseconds", ts, "datetime(6)", "2024-02-29 12:00:00.000001", "", "2024-02-29 12:00:00.000001"},
		{"fraction within precision", ts, "datetime(3)", "2024-02-29 12:00:00.5", "", "2024-02-29 12:00:00.5"},
		{"fraction past precision", ts, "datetime", "2024-02-29 23:59:59.999999",
			"timestamp has more fractional second digits than DATETIME keeps", "2024-02-29 23:59:59"},
		{"fraction past precision 3", ts, "datetime(3)", "2024-02-29 12:00:00.1234",
			"timestamp has more fractional second digits than DATETIME(3) keeps", "2024-02-29 12:00:00.123"},
		{"infinity", ts, "datetime(6)", "infinity", "timestamp infinity " + datetimeRange, "9999-12-31 23:59:59.999999"},
		{"infinity into DATETIME(0)", ts, "datetime", "infinity", "timestamp infinity " + datetimeRange, "9999-12-31 23:59:59"},
		{"infinity into DATETIME(2)", ts, "datetime(2)", "infinity", "timestamp infinity " + datetimeRange, "9999-12-31 23:59:59.99"},
		{"-infinity", ts, "datetime(6)", "-infinity", "timestamp -infinity " + datetimeRange, "1000-01-01 00:00:00"},
		{"BC", ts, "datetime(6)", "0001-01-01 00:00:00 BC", "timestamp " + datetimeRange, "1000-01-01 00:00:00"},
		{"after 9999", ts, "datetime(6)", "294276-12-31 00:00:00", "timestamp " + datetimeRange, "9999-12-31 23:59:59.999999"},
		{"last microsecond", ts, "datetime(6)", "9999-12-31 23:59:59.999999", "", "9999-12-31 23:59:59.999999"},
		{"into DATE at midnight", ts, "date", "2024-02-29 00:00:00", "", "2024-02-29"},
		{"into DATE with a time of day", ts, "date", "2024-02-29 12:00:00", "timestamp has a time of day that DATE does not keep", "2024-02-29"},
		{"into TIMESTAMP", ts, "timestamp(6)", "2038-01-19 03:14:07.999999", "", "2038-01-19 03:14:07.999999"},
	})
}

func TestTimestamptzEdges(t *testing.T) {
	tz := col(oidTimestamptz, -1)
	const tsRange = "timestamptz is outside TIMESTAMP's range 1970-01-01 00:00:01..2038-01-19 03:14:07 UTC"
	runEdges(t, []edge{
		{"UTC", tz, "datetime(6)", "2024-02-29 06:30:00.000001+00", "", "2024-02-29 06:30:00.000001"},
		{"+05:30", tz, "datetime(6)", "2024-02-29 12:00:00.000001+05:30", "", "2024-02-29 06:30:00.000001"},
		{"-03 crosses midnight and month", tz, "datetime(6)", "2024-02-29 22:00:00.5-03", "", "2024-03-01 01:00:00.5"},
		{"offset with seconds", tz, "datetime(6)", "2024-01-01 00:00:00+05:53:28", "", "2023-12-31 18:06:32"},
		{"+14 into the previous year", tz, "datetime(0)", "2024-01-01 05:00:00+14", "", "2023-12-31 15:00:00"},
		{"UTC past 9999", tz, "datetime(6)", "9999-12-31 23:00:00-03", "timestamptz " + datetimeRange, "9999-12-31 23:59:59.999999"},
		{"UTC before 1000", tz, "datetime(6)", "1000-01-01 01:00:00+05:30", "timestamptz " + datetimeRange, "1000-01-01 00:00:00"},
		{"BC", tz, "datetime(6)", "0001-01-01 00:00:00+00 BC", "timestamptz " + datetimeRange, "1000-01-01 00:00:00"},
		{"infinity", tz, "datetime(6)", "infinity", "timestamptz infinity " + datetimeRange, "9999-12-31 23:59:59.999999"},
		{"TIMESTAMP's last second", tz, "timestamp(6)", "2038-01-19 03:14:07.999999+00", "", "2038-01-19 03:14:07.999999"},
		{"past TIMESTAMP", tz, "timestamp", "2038-01-19 03:14:08+00", tsRange, "2038-01-19 03:14:07"},
		{"TIMESTAMP's epoch", tz, "timestamp", "1970-01-01 00:00:00+00", tsRange, "1970-01-01 00:00:01"},
		{"into TIMESTAMP via offset", tz, "timestamp", "1970-01-01 05:30:01+05:30", "", "1970-01-01 00:00:01"},
	})
}

func TestTimeEdges(t *testing.T) {
	tm, tz := col(oidTime, -1), col(oidTimetz, -1)
	runEdges(t, []edge{
		{"time", tm, "time(6)", "13:45:00.123456", "", "13:45:00.123456"},
		{"24:00:00", tm, "time", "24:00:00", "", "24:00:00"},
		{"midnight", tm, "time", "00:00:00", "", "00:00:00"},
		{"fraction past precision", tm, "time(3)", "13:45:00.123456", "time has more fractional second digits than TIME(3) keeps", "13:45:00.123"},
		{"timetz -03", tz, "time(6)", "12:00:00.5-03", "", "15:00:00.5"},
		{"timetz +05:30", tz, "time(6)", "12:00:00+05:30", "", "06:30:00"},
		{"timetz wraps forward", tz, "time(6)", "23:00:00-03", "", "02:00:00"},
		{"timetz wraps back", tz, "time(6)", "01:00:00+05:30", "", "19:30:00"},
		{"timetz 24:00:00 is midnight", tz, "time(6)", "24:00:00+00", "", "00:00:00"},
		{"timetz extreme offset", tz, "time(6)", "23:59:59.999999-14:59", "", "14:58:59.999999"},
	})
}

// BenchmarkConvertDateTime converts a timestamptz in range into
// DATETIME(6), the common case: no error message is built for it.
func BenchmarkConvertDateTime(b *testing.B) {
	conv, err := MySQLConverter(col(oidTimestamptz, -1), mycol("datetime(6)"), PolicyError)
	if err != nil {
		b.Fatal(err)
	}
	text := []byte("2026-01-02 10:17:36.123456+00")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conv(text); err != nil {
			b.Fatal(err)
		}
	}
}
