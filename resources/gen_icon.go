//go:build ignore

// gen_icon draws resources/icon.png: a rounded square with a blue-violet
// gradient, a white speech bubble, and three bars (the benchmark) inside.
// Run from the repository root: go run resources/gen_icon.go
package main

import (
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
)

const size = 512

func inRoundRect(x, y, x0, y0, x1, y1, r float64) bool {
	if x < x0 || x > x1 || y < y0 || y > y1 {
		return false
	}
	cx := math.Max(x0+r, math.Min(x, x1-r))
	cy := math.Max(y0+r, math.Min(y, y1-r))
	return (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r
}

// coverage supersamples a shape 4×4 per pixel.
func coverage(px, py int, in func(x, y float64) bool) float64 {
	n := 0
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			if in(float64(px)+(float64(i)+0.5)/4, float64(py)+(float64(j)+0.5)/4) {
				n++
			}
		}
	}
	return float64(n) / 16
}

func blend(dst color.NRGBA, src color.NRGBA, a float64) color.NRGBA {
	if a <= 0 {
		return dst
	}
	sa := a * float64(src.A) / 255
	da := float64(dst.A) / 255
	oa := sa + da*(1-sa)
	if oa == 0 {
		return color.NRGBA{}
	}
	mix := func(s, d uint8) uint8 {
		return uint8((float64(s)*sa + float64(d)*da*(1-sa)) / oa)
	}
	return color.NRGBA{mix(src.R, dst.R), mix(src.G, dst.G), mix(src.B, dst.B), uint8(oa * 255)}
}

func main() {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	bg := func(x, y float64) bool { return inRoundRect(x, y, 24, 24, 488, 488, 96) }
	bubble := func(x, y float64) bool {
		if inRoundRect(x, y, 104, 120, 408, 340, 56) {
			return true
		}
		// the tail: a triangle under the bubble's lower left
		return y >= 330 && y <= 410 && x >= 150 && x <= 230 && (x-150) >= (y-330)*0.25 && (230-x) >= (y-330)*0.75
	}
	bars := []struct{ x0, h float64 }{{170, 70}, {234, 120}, {298, 160}}
	bar := func(x, y float64) bool {
		for _, b := range bars {
			if inRoundRect(x, y, b.x0, 300-b.h, b.x0+44, 300, 10) {
				return true
			}
		}
		return false
	}
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			t := float64(px+py) / (2 * size)
			top := color.NRGBA{uint8(40 + 60*t), uint8(90 - 30*t), uint8(200 + 40*t), 255}
			c := blend(color.NRGBA{}, top, coverage(px, py, bg))
			c = blend(c, color.NRGBA{255, 255, 255, 255}, coverage(px, py, bubble))
			c = blend(c, color.NRGBA{uint8(60 + 60*t), 80, 210, 255}, coverage(px, py, bar))
			img.SetNRGBA(px, py, c)
		}
	}
	f, err := os.Create("resources/icon.png")
	if err != nil {
		log.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
