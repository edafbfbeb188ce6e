package logs

// Internal functions that the external tests check against a reference.
var (
	ParseTime = parseTime
	TailStart = tailStart
)
