// LANESUM8 sums the eight fp32 lanes of y into the low lane of x (x is
// y's low half; t is clobbered) in the order every AVX2 kernel and its Go
// twin use: (0+4)+(1+5) + (2+6)+(3+7).
#define LANESUM8(y, x, t) VEXTRACTF128 $1, y, t; VADDPS t, x, x; VHADDPS x, x, x; VHADDPS x, x, x
