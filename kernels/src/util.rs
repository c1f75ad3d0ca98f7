//! Small kernels the host uses to prepare data on the device: random bf16 inputs (so no
//! gigabytes cross PCIe) and a poison fill for outputs.

/// A counter-based hash (SplitMix64's finalizer): element `i` of stream `seed` is the same value
/// whatever the launch shape.
#[inline(always)]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

/// bf16 bits of `x` (round to nearest even; inputs here are finite).
#[inline(always)]
fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// `out[i] = scale · u`, u uniform in [-1, 1), for i < n; grid-stride.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hgemm_fill_random_bf16(out: *mut u16, n: u64, seed: u64, scale: f32) {
    let stride = crate::ptx::sreg::nctaid_x() as u64 * 256;
    let mut i = crate::ptx::sreg::ctaid_x() as u64 * 256 + crate::ptx::sreg::tid_x() as u64;
    while i < n {
        let h = mix(seed.wrapping_mul(0x9e3779b97f4a7c15) ^ mix(i));
        let u = (h >> 40) as f32 * (1.0 / (1u64 << 23) as f32) - 1.0;
        unsafe { out.add(i as usize).write(bf16_bits(u * scale)) };
        i += stride;
    }
}

/// `out[i] = bits` for i < n; grid-stride.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hgemm_fill_u16(out: *mut u16, n: u64, bits: u16) {
    let stride = crate::ptx::sreg::nctaid_x() as u64 * 256;
    let mut i = crate::ptx::sreg::ctaid_x() as u64 * 256 + crate::ptx::sreg::tid_x() as u64;
    while i < n {
        unsafe { out.add(i as usize).write(bits) };
        i += stride;
    }
}
