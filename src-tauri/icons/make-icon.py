"""Draws icons/source.png (1024x1024 RGBA; Tauri needs the alpha channel): a rounded teal square
with a white M over a yellow bar, drawn on a 256-unit grid. Every size the window, the tray and
the installers use (icon.png, the sized PNGs, icon.icns, icon.ico) is made from it by the Tauri
command line. From src-tauri/:

    python3 icons/make-icon.py && npx tauri icon icons/source.png -o icons && rm -rf icons/android icons/ios
"""
import math
import struct
import zlib

N = 256
# The drawing's pixels: each is sampled at the centre of its cell of the 256-unit grid.
SIZE = 1024


def inside_rounded(x, y, r=48, m=8):
    lo, hi = m, N - 1 - m
    cx = min(max(x, lo + r), hi - r)
    cy = min(max(y, lo + r), hi - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r and lo <= x <= hi and lo <= y <= hi


def seg_dist(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    t = max(0, min(1, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - ax - t * dx, py - ay - t * dy)


STROKES = [(72, 180, 72, 76), (72, 76, 128, 140), (128, 140, 184, 76), (184, 76, 184, 180)]


def pixel(x, y):
    if not inside_rounded(x, y):
        return (0, 0, 0, 0)
    t = y / N
    if min(seg_dist(x, y, *s) for s in STROKES) <= 13:
        return (255, 255, 255, 255)
    if 188 <= y <= 204 and 72 <= x <= 184:
        return (250, 204, 21, 255)
    return (int(13 + 10 * t), int(110 - 30 * t), int(120 - 20 * t), 255)


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


SCALE = N / SIZE
raw = b"".join(
    b"\x00" + b"".join(bytes(pixel((x + 0.5) * SCALE, (y + 0.5) * SCALE)) for x in range(SIZE))
    for y in range(SIZE)
)
png = (
    b"\x89PNG\r\n\x1a\n"
    + chunk(b"IHDR", struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0))
    + chunk(b"IDAT", zlib.compress(raw, 9))
    + chunk(b"IEND", b"")
)
with open("icons/source.png", "wb") as f:
    f.write(png)
