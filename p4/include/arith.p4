/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Arithmetic v1model lacks. p4c-bm2-ss refuses division and remainder by a value it cannot
 * evaluate at compile time, so x / d for a small divisor d is a multiplication by
 * m = ceil(2^64 / d) and a shift: exact for x < 2^32 and d <= 16, since the error term
 * x * (m * d - 2^64) / (d * 2^64) stays below 2^-27, under the smallest fraction 1 / d that
 * could carry x / d over an integer.
 */
#ifndef MPSCHED_ARITH_P4
#define MPSCHED_ARITH_P4

/* ceil(2^64 / d) for 1 <= d <= 16; 0 otherwise (callers check d first). */
bit<72> reciprocal(in bit<32> d) {
    bit<72> m = 0;
    if (d == 1) { m = 0x10000000000000000; }
    else if (d == 2) { m = 0x8000000000000000; }
    else if (d == 3) { m = 0x5555555555555556; }
    else if (d == 4) { m = 0x4000000000000000; }
    else if (d == 5) { m = 0x3333333333333334; }
    else if (d == 6) { m = 0x2aaaaaaaaaaaaaab; }
    else if (d == 7) { m = 0x2492492492492493; }
    else if (d == 8) { m = 0x2000000000000000; }
    else if (d == 9) { m = 0x1c71c71c71c71c72; }
    else if (d == 10) { m = 0x199999999999999a; }
    else if (d == 11) { m = 0x1745d1745d1745d2; }
    else if (d == 12) { m = 0x1555555555555556; }
    else if (d == 13) { m = 0x13b13b13b13b13b2; }
    else if (d == 14) { m = 0x124924924924924a; }
    else if (d == 15) { m = 0x1111111111111112; }
    else if (d == 16) { m = 0x1000000000000000; }
    return m;
}

/* x / d for 1 <= d <= 16. */
bit<32> div_small(in bit<32> x, in bit<32> d) {
    bit<136> p = (bit<136>)x * (bit<136>)reciprocal(d);
    return (bit<32>)(p >> 64);
}

/* x % d for 1 <= d <= 16. */
bit<32> mod_small(in bit<32> x, in bit<32> d) {
    return x - div_small(x, d) * d;
}

/* RFC 1624: the checksum after a 16-bit word of the header changes from old to new. */
bit<16> csum_replace(in bit<16> check, in bit<16> old, in bit<16> new) {
    bit<32> c = (bit<32>)(~check) + (bit<32>)(~old) + (bit<32>)new;
    c = (c & 0xffff) + (c >> 16);
    c = (c & 0xffff) + (c >> 16);
    return ~((bit<16>)c);
}

/* MurmurHash3's fmix32 (Ecmp::seeded_hash mixes the seeded CRC with it). */
bit<32> fmix32(in bit<32> x) {
    bit<32> h = x;
    h = h ^ (h >> 16);
    h = h * 0x85ebca6b;
    h = h ^ (h >> 13);
    h = h * 0xc2b2ae35;
    return h ^ (h >> 16);
}

bit<32> min32(in bit<32> a, in bit<32> b) {
    bit<32> r = b;
    if (a < b) { r = a; }
    return r;
}

#endif
