// Package resources holds etchat's bundled assets: the app icon
// (icon.png, drawn by gen_icon.go: go run resources/gen_icon.go).
package resources

import _ "embed"

// IconPNG is the 512×512 app icon.
//
//go:embed icon.png
var IconPNG []byte
