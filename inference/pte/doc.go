// Package pte reads ExecuTorch program files (.pte) without loading them
// whole: the file header and "eh00" extended header, the segment table and
// the Program flatbuffer (parsed with a small hand-written, bounds-checked
// flatbuffer reader), giving each method's inputs and outputs, constant
// methods evaluated to Go values, each delegate's blob location, and the
// named data (weights) with absolute file offsets so engines can bind them
// without copying. Reads go through an io.ReaderAt and are counted
// (File.BytesRead). Malformed input yields a *FormatError naming the file and
// what is wrong; allocations are bounded by the file's real size.
package pte
