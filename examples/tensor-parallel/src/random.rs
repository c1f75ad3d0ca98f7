//! Seeded inputs: SplitMix64 (Steele, Lea and Flood, 2014), so that a seed names the same values
//! on the host's reference and on every GPU.

/// `n` values uniform in [-1, 1) from SplitMix64 stream `seed`.
pub fn uniform(n: usize, seed: u64) -> impl Iterator<Item = f64> {
    let mut s = seed;
    (0..n).map(move |_| {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    })
}
