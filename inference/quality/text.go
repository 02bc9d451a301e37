package quality

import _ "embed"

// DefaultText is the bundled text scored when none is given: the first
// 12,047 bytes of the First Book of Newton's Opticks (lines 122–396 of
// Project Gutenberg's transcription as the Go distribution ships it in
// $GOROOT/src/testdata/Isaac.Newton-Opticks.txt, sha256 d4a9ac22…507bbd,
// Go 1.26), unchanged. The 1730 text is in the public domain; Go keeps
// the file as test data for its compressors.
//
//go:embed opticks.txt
var DefaultText string

// DefaultTextSource names DefaultText in output and stored runs.
const DefaultTextSource = "bundled: Newton, Opticks (1730), the First Book's opening, 12 KB (public domain; from Go's src/testdata)"
