"""Builds app/testdata/fonts/fallback.ttf, the UI tests' font for the glyphs
Fyne's bundled fonts lack: each code point of runes.txt is taken from the
first source font that has it (subset with fontTools, scaled to the first
font's units per em), the parts merged and renamed (DejaVu's licence asks
that a modified font not be called Bitstream or Vera). Run by
scripts/update-masters; SOURCE_DATE_EPOCH keeps the output byte-stable.

usage: fallback-font.py RUNES.txt OUT.ttf SOURCE.ttf...
"""
import os
import sys
import tempfile

from fontTools import merge, subset
from fontTools.ttLib import TTFont
from fontTools.ttLib.scaleUpem import scale_upem

runes_file, out, *sources = sys.argv[1:]
want = []
for line in open(runes_file, encoding="utf-8"):
    f = line.split()
    if f and f[0].startswith("U+"):
        want.append(int(f[0][2:], 16))
if not want:
    sys.exit(runes_file + " lists no code point")

fonts = [TTFont(p) for p in sources]
upem = fonts[0]["head"].unitsPerEm
parts, left = [], list(want)
for font in fonts:
    cmap = font.getBestCmap()
    mine = [r for r in left if r in cmap]
    left = [r for r in left if r not in cmap]
    if not mine:
        continue
    opts = subset.Options()
    opts.name_IDs = []  # renamed below
    opts.notdef_outline = True
    opts.hinting = False  # two fonts' hinting programs do not merge
    opts.drop_tables += ["kern", "MATH", "vhea", "vmtx", "gasp", "FFTM", "cvt ", "fpgm", "prep"]
    s = subset.Subsetter(opts)
    s.populate(unicodes=mine)
    s.subset(font)
    os2 = font["OS/2"]
    if os2.version < 3:  # the merger compares version 3's fields of every font
        os2.version = 3
        os2.sxHeight = os2.sCapHeight = 0
        os2.usDefaultChar, os2.usBreakChar, os2.usMaxContext = 0, 32, 0
        os2.ulCodePageRange1 = os2.ulCodePageRange2 = 0
    if font["head"].unitsPerEm != upem:
        scale_upem(font, upem)
    parts.append(font)
if left:
    sys.exit("no source font has " + ", ".join("U+%04X" % r for r in left))

with tempfile.TemporaryDirectory() as tmp:
    paths = []
    for i, font in enumerate(parts):
        paths.append(os.path.join(tmp, "%d.ttf" % i))
        font.save(paths[-1])
    merged = merge.Merger().merge(paths) if len(paths) > 1 else TTFont(paths[0])
name = merged["name"]
name.names = []
for nid, text in ((1, "etchat test fallback"), (2, "Regular"), (4, "etchat test fallback"), (6, "etchat-test-fallback")):
    name.setName(text, nid, 3, 1, 0x409)
merged.save(out)
