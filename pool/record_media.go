package pool

// RecordingType is the media type of a recording (the format at the top
// of record.go), for a server that hands one over: the Content-Type of
// Keeper.RecordingHandler's answers.
const RecordingType = "application/vnd.wardpool.recording"

// RecordingExt is the file name extension of a recording.
const RecordingExt = ".wprc"
